import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDeployCommands } from '../helpers/readme-deploy-commands.js';

// The README test's check of deployment commands it cannot run: it must tell a true command from a stale one.

const ROOT = resolve(import.meta.dirname, '../..');

describe('checkDeployCommands', () => {
  it('accepts commands that name what exists', () => {
    const text = [
      'BASE_IMAGE=node:20-bookworm-slim scripts/container/build-image.sh   # a comment',
      'docker build --build-arg BASE_IMAGE=x -t tollgate .',
      'docker run -d -p 8080:8080 -v data:/data -e TOLLGATE_ADMIN_KEY=k -e OPENAI_API_KEY -e PORT=9000 tollgate',
      'helm install t deploy/helm/tollgate --set persistence.size=1Gi --set secrets.providerKeys.GROQ_API_KEY=x',
      'kubectl apply -k deploy/kustomize/base',
    ].join('\n');
    expect(checkDeployCommands(text, ROOT)).toEqual({ checked: 5, problems: [] });
  });

  it('names each stale part', () => {
    const text = [
      'NODE_VERSION=22 scripts/container/missing.sh',
      'docker build --build-arg NODE_IMAGE=x .',
      'docker run -v data:/var/lib/tollgate -e TOLLGATE_DATADIR=/data tollgate',
      'helm install t deploy/helm/tollgate --set replicaCount=3',
      'helm install t deploy/helm/other',
      'kubectl apply -k deploy/kustomize/nowhere',
    ].join('\n');
    expect(checkDeployCommands(text, ROOT).problems).toEqual([
      'NODE_VERSION is not an ARG of the Dockerfile',
      'scripts/container/missing.sh is not an executable file',
      'NODE_IMAGE is not an ARG of the Dockerfile',
      "docker run: data:/var/lib/tollgate is not the image's volume (/data)",
      'docker run: tollgate does not read TOLLGATE_DATADIR',
      'helm --set replicaCount: not in deploy/helm/tollgate/values.yaml',
      'helm: no chart at deploy/helm/other',
      'kubectl: deploy/kustomize/nowhere has no kustomization.yaml',
    ]);
  });
});
