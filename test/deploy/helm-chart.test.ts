import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderChart, renderTemplate } from '../helpers/helm-render.js';
import { schemaProblems, wiringProblems, type K8sObject } from '../helpers/k8s-manifests.js';

// deploy/helm/tollgate rendered as `helm template` would (test/helpers/helm-render.ts: the template subset the
// chart uses; no helm binary here), every object validated against the Kubernetes schemas and their wiring checked.

const CHART = resolve(import.meta.dirname, '../../deploy/helm/tollgate');

function render(values: Record<string, unknown> = {}): K8sObject[] {
  return renderChart(CHART, { releaseName: 'gw', values }).map((rendered) => rendered.object);
}

function find(objects: K8sObject[], kind: string): K8sObject {
  const found = objects.find((object) => object.kind === kind);
  if (!found) throw new Error(`no ${kind} rendered`);
  return found;
}

const EVERYTHING_ON = {
  ingress: { enabled: true, className: 'nginx', annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '600' }, tls: [{ secretName: 'gw-tls', hosts: ['tollgate.example.com'] }] },
  serviceMonitor: { enabled: true, labels: { release: 'kube-prometheus-stack' } },
  secrets: { adminKey: 'admin-1', secretKey: 'passphrase', metricsToken: 'scrape-me', providerKeys: { OPENAI_API_KEY: 'sk-test', GROQ_API_KEY: 'gsk-test' } },
  env: [{ name: 'TOLLGATE_TRUSTED_PROXIES', value: '10.0.0.10' }],
  persistence: { storageClass: 'fast-ssd', size: '50Gi' },
  config: { providers: { openai: { api_key: 'env:OPENAI_API_KEY' } }, routes: { 'chat-default': { targets: [{ model: 'openai/gpt-4o-mini', weight: 1 }] } } },
  nodeSelector: { 'kubernetes.io/arch': 'amd64' },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'llm', effect: 'NoSchedule' }],
  podAnnotations: { 'example.com/team': 'platform' },
};

describe('Helm chart deploy/helm/tollgate', () => {
  it('renders, with the default values, a valid and consistent set: Deployment, Service, ConfigMap, Secret, PVC', () => {
    const objects = render();
    expect(objects.map((object) => object.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'PersistentVolumeClaim', 'Secret', 'Service']);
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    expect(wiringProblems(objects)).toEqual([]);
    const container = find(objects, 'Deployment').spec.template.spec.containers[0];
    expect(container.image).toBe('tollgate:0.1.0');
    expect(container.envFrom).toEqual([{ secretRef: { name: 'gw-env' } }]);
  });

  it('renders every option at once (ingress, ServiceMonitor, keys, storage class, scheduling) validly', () => {
    const objects = render(EVERYTHING_ON);
    expect(objects.map((object) => object.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'Ingress', 'PersistentVolumeClaim', 'Secret', 'Service', 'ServiceMonitor']);
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    expect(wiringProblems(objects)).toEqual([]);
    expect(find(objects, 'Secret').stringData).toEqual({ TOLLGATE_ADMIN_KEY: 'admin-1', TOLLGATE_SECRET_KEY: 'passphrase', TOLLGATE_METRICS_TOKEN: 'scrape-me', OPENAI_API_KEY: 'sk-test', GROQ_API_KEY: 'gsk-test' });
    // The ServiceMonitor sends the metrics token the gateway was given.
    expect(find(objects, 'ServiceMonitor').spec.endpoints[0].bearerTokenSecret).toEqual({ name: 'gw-env', key: 'TOLLGATE_METRICS_TOKEN' });
    expect(find(objects, 'ServiceMonitor').metadata.labels.release).toBe('kube-prometheus-stack');
    expect(find(objects, 'PersistentVolumeClaim').spec).toMatchObject({ storageClassName: 'fast-ssd', resources: { requests: { storage: '50Gi' } } });
    expect(find(objects, 'Ingress').spec).toMatchObject({ ingressClassName: 'nginx', tls: [{ secretName: 'gw-tls' }] });
    const pod = find(objects, 'Deployment').spec.template;
    expect(pod.spec.containers[0].env).toContainEqual({ name: 'TOLLGATE_TRUSTED_PROXIES', value: '10.0.0.10' });
    expect(pod.spec.tolerations).toEqual(EVERYTHING_ON.tolerations);
    expect(pod.metadata.annotations['example.com/team']).toBe('platform');
  });

  it('uses an existing Secret and claim instead of making them', () => {
    const objects = render({ secrets: { existingSecret: 'my-keys' }, persistence: { existingClaim: 'my-data' }, serviceMonitor: { enabled: true, bearerTokenSecret: { name: 'my-keys', key: 'TOLLGATE_METRICS_TOKEN' } } });
    expect(objects.map((object) => object.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'Service', 'ServiceMonitor']);
    expect(objects.flatMap(schemaProblems)).toEqual([]);
    expect(wiringProblems(objects, { externalSecrets: ['my-keys'], externalClaims: ['my-data'] })).toEqual([]);
    // Without them in the cluster the references dangle, and the check says so.
    expect(wiringProblems(objects)).toEqual([
      'the data volume\'s claim my-data does not exist',
      'envFrom names Secret my-keys, which does not exist',
      'ServiceMonitor/gw: bearer token Secret my-keys does not exist',
    ]);
  });

  it('keeps the data in an emptyDir only when persistence is turned off, and the check knows the difference', () => {
    const objects = render({ persistence: { enabled: false } });
    expect(objects.some((object) => object.kind === 'PersistentVolumeClaim')).toBe(false);
    expect(find(objects, 'Deployment').spec.template.spec.volumes[0]).toEqual({ name: 'data', emptyDir: {} });
    expect(wiringProblems(objects, { ephemeralDataAllowed: true })).toEqual([]);
    expect(wiringProblems(objects)).toEqual(['the data dir /data is not on a PersistentVolumeClaim']);
  });

  it('rolls the pod when the config changes (the checksum follows the config)', () => {
    const checksum = (values: Record<string, unknown>): string => find(render(values), 'Deployment').spec.template.metadata.annotations['checksum/config'];
    expect(checksum({})).toMatch(/^[0-9a-f]{64}$/);
    expect(checksum({})).toBe(checksum({}));
    expect(checksum({ config: { settings: { log_level: 'debug' } } })).not.toBe(checksum({}));
  });

  it('catches a config the gateway would refuse, and broken wiring', () => {
    expect(wiringProblems(render({ config: { routes: { chat: { targets: [{ model: 'nowhere/model' }] } } } }))).toEqual([
      expect.stringMatching(/^ConfigMap gw-config: the gateway would refuse its config: .*nowhere/),
    ]);
    const objects = render();
    const deployment = find(objects, 'Deployment');
    const container = deployment.spec.template.spec.containers[0];
    find(objects, 'Service').spec.selector['app.kubernetes.io/instance'] = 'other';
    container.livenessProbe.httpGet.path = '/healthz';
    container.securityContext.readOnlyRootFilesystem = false;
    deployment.spec.replicas = 2;
    expect(wiringProblems(objects)).toEqual([
      'replicas is 2, expected 1 (LMDB has one writer)',
      'livenessProbe asks /healthz, not /health',
      'Service/gw: its selector does not match the pod labels',
      'the root filesystem is not read-only',
    ]);
    // And the schema check is a real one.
    container.ports[0].containerPort = 'eighty';
    expect(schemaProblems(deployment)).toEqual([expect.stringContaining('containerPort must be integer')]);
  });
});

describe('the chart renderer (the Go template subset)', () => {
  const scope = { Values: { a: { b: 'x', list: [1, 2], empty: {} }, n: 3 }, Release: { Name: 'r' }, Chart: {} };

  it('prints values, pipes them through functions and trims around {{- -}}', () => {
    expect(renderTemplate('name: {{ .Release.Name }}-{{ .Values.a.b | quote }}', scope, 't')).toBe('name: r-"x"');
    expect(renderTemplate('k:\n  {{- toYaml .Values.a.list | nindent 2 }}\n', scope, 't')).toBe('k:\n  - 1\n  - 2\n');
    expect(renderTemplate('{{ .Values.missing | default "d" }} {{ .Values.n }}', scope, 't')).toBe('d 3');
    expect(renderTemplate('a {{- if .Values.a.empty }}yes{{- else if not .Values.missing }} no{{ end -}}  .', scope, 't')).toBe('a no.');
  });

  it('refuses what it does not implement, and a value that does not exist', () => {
    expect(() => renderTemplate('{{ include "x" . }}', scope, 't')).toThrow(/outside the template subset/);
    expect(() => renderTemplate('{{ range .Values.a.list }}{{ end }}', scope, 't')).toThrow(/outside the template subset/);
    expect(() => renderTemplate('{{ upper .Values.a.b }}', scope, 't')).toThrow(/unknown function/);
    expect(() => renderTemplate('{{ .Values.a.typo }}', scope, 't')).toThrow(/has no value/);
    expect(() => renderTemplate('{{ if .Values.n }}open', scope, 't')).toThrow(/without \{\{ end \}\}/);
  });
});
