import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { schemaProblems, wiringProblems, type K8sObject } from '../helpers/k8s-manifests.js';

// deploy/kustomize rendered by `kubectl kustomize` (the kustomize built into kubectl: Debian's kubernetes-client
// 1.20 has v2.0.3, newer kubectls v5; the manifests are written for both), every object validated against the
// Kubernetes schemas and the wiring checked. CI installs kubectl when missing (.ci/run); on a machine without it
// the tests are skipped with the reason, as the browser tests are without Chromium.

const ROOT = resolve(import.meta.dirname, '../..');
const KUBECTL = process.env.TOLLGATE_KUBECTL ?? 'kubectl';
const HAS_KUBECTL = spawnSync(KUBECTL, ['version', '--client'], { encoding: 'utf8' }).status === 0;
const RUN = HAS_KUBECTL || process.env.CI === 'true';
if (!RUN) console.warn(`\nThe kustomize tests are skipped: no ${KUBECTL} (apt-get install -y kubernetes-client, or set TOLLGATE_KUBECTL).\n`);

function kustomize(dir: string): K8sObject[] {
  const result = spawnSync(KUBECTL, ['kustomize', resolve(ROOT, dir)], { encoding: 'utf8', timeout: 30_000 });
  expect(result.status, result.stderr).toBe(0);
  return parseAllDocuments(result.stdout)
    .map((document) => document.toJS() as K8sObject | null)
    .filter((object): object is K8sObject => object !== null);
}

function find(objects: K8sObject[], kind: string): K8sObject {
  const found = objects.find((object) => object.kind === kind);
  if (!found) throw new Error(`no ${kind} rendered`);
  return found;
}

describe.runIf(RUN)('kustomize deploy/kustomize', () => {
  it('base: valid objects, wired together (selector, probes on /health, the PVC at the data dir, config, secret)', () => {
    const objects = kustomize('deploy/kustomize/base');
    expect(objects.map((object) => object.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'PersistentVolumeClaim', 'Secret', 'Service']);
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    expect(wiringProblems(objects)).toEqual([]);
    // The generated ConfigMap's name carries its content's hash, and the Deployment names that one: a config
    // change makes a new name, which rolls the pod.
    const configMap = find(objects, 'ConfigMap').metadata.name as string;
    expect(configMap).toMatch(/^tollgate-config-[a-z0-9]{10}$/);
    expect(find(objects, 'Deployment').spec.template.spec.volumes).toContainEqual({ name: 'config', configMap: { name: configMap } });
  });

  it('the example overlay: namespace, image, its own config and secrets, still valid and wired', () => {
    const objects = kustomize('deploy/kustomize/overlays/example');
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    // The overlay's config names env:OPENAI_API_KEY: the wiring check resolves it from the Secret the pod loads.
    expect(wiringProblems(objects)).toEqual([]);
    expect(new Set(objects.map((object) => object.metadata.namespace))).toEqual(new Set(['llm']));
    expect(find(objects, 'Deployment').spec.template.spec.containers[0].image).toBe('registry.example.com/tollgate:0.1.0');
    const secret = find(objects, 'Secret');
    expect(Object.keys(secret.data).sort()).toEqual(['OPENAI_API_KEY', 'TOLLGATE_ADMIN_KEY']);
    expect(find(objects, 'ConfigMap').data['tollgate.yaml']).toContain('chat-default');
  });

  it('a broken rendering is caught: the claim renamed, the config unmounted', () => {
    const objects = kustomize('deploy/kustomize/base');
    find(objects, 'PersistentVolumeClaim').metadata.name = 'renamed';
    const pod = find(objects, 'Deployment').spec.template.spec;
    pod.containers[0].volumeMounts = pod.containers[0].volumeMounts.filter((mount: K8sObject) => mount.name !== 'config');
    expect(wiringProblems(objects)).toEqual([
      "the data volume's claim tollgate-data does not exist",
      'TOLLGATE_CONFIG is /etc/tollgate/tollgate.yaml, but no ConfigMap is mounted at /etc/tollgate',
    ]);
  });
});
