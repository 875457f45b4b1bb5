import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { createLog } from '../../src/log.js';

/** `/` without a built dashboard: a page saying how to build it, and every API path answering as before. */
let gateway: Gateway;
let url: string;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-dash-'));
  gateway = await createGateway({ config: { settings: { data_dir: dir } }, log: createLog('silent'), dashboardDir: join(dir, 'no-build-here') });
  url = await gateway.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await gateway.close(100);
  rmSync(dir, { recursive: true, force: true });
});

describe('the dashboard route', () => {
  it('answers / with how to build the dashboard when it is not built (503, not a 500)', async () => {
    const response = await fetch(`${url}/`);
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toContain('npm run build:dashboard');
  });

  it('leaves the API, health and unknown URLs as they were', async () => {
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect((await fetch(`${url}/api/keys`)).status).toBe(200);
    const unknown = await fetch(`${url}/dashboard/nothing`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('unknown_url');
    const missingAsset = await fetch(`${url}/assets/nothing.js`);
    expect(missingAsset.status).toBe(404);
  });
});
