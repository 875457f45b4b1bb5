import { mkdtempSync, readFileSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { parseConfigText } from '../../src/config/load-file.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((done) => setTimeout(done, 20));
  }
}

function fileText(model: string): string {
  return ['providers:', '  lab:', '    type: openai', '    base_url: http://127.0.0.1:9/v1', '    api_key: sk-lab-0001', `    models: [${model}]`, ''].join('\n');
}

function save(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

async function start(path: string, dataDir: string): Promise<RunningGateway> {
  return startGateway(parseConfigText(readFileSync(path, 'utf8'), path), {}, { configPath: path, dataDir });
}

async function patchRoute(url: string, name: string, ifMatch?: string): Promise<Response> {
  return fetch(`${url}/api/config`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json', ...(ifMatch ? { 'if-match': ifMatch } : {}) },
    body: JSON.stringify({ routes: { [name]: { targets: [{ model: 'lab/m1' }] } } }),
  });
}

describe('config versions across a restart', () => {
  it('are never given twice: file saves count too, so an ETag read before a restart cannot match a later config', async () => {
    const path = join(tempDir('tollgate-version-'), 'tollgate.config.yaml');
    const dataDir = tempDir('tollgate-version-data-');
    writeFileSync(path, fileText('m1'));
    let tg = await start(path, dataDir);
    let staleTag: string;
    try {
      // Versions given to saves of the file only (nothing set through the API yet).
      for (const model of ['m2', 'm3']) {
        save(path, fileText(model));
        await until(() => tg.gateway.configService.current().providers.get('lab')?.models?.includes(model) === true);
      }
      staleTag = (await fetch(`${tg.url}/api/config`)).headers.get('etag') ?? '';
      expect(staleTag).toBe(`"${tg.gateway.configService.current().version}"`);
    } finally {
      await tg.stop();
    }

    tg = await start(path, dataDir);
    try {
      const before = Number(staleTag.slice(1, -1));
      expect(tg.gateway.configService.current().version).toBeGreaterThan(before);
      // Two changes by another admin after the restart; a write still conditioned on the old tag must not apply.
      expect((await patchRoute(tg.url, 'other-a')).status).toBe(200);
      expect((await patchRoute(tg.url, 'other-b')).status).toBe(200);
      const stale = await patchRoute(tg.url, 'mine', staleTag);
      expect(stale.status).toBe(412);
      expect(tg.gateway.configService.current().routes.has('mine')).toBe(false);
      // Each audited change names a version of its own.
      const versions = tg.gateway.configService.audit({ limit: 50 }).map((entry) => entry.version);
      expect(new Set(versions).size).toBe(versions.length);
    } finally {
      await tg.stop();
    }
  }, 20_000);
});
