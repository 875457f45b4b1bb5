import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

/**
 * A built dashboard drives /api with the browser's standing (session cookie, or open loopback access): another site
 * must not frame it and trick clicks on its buttons (clickjacking), and its files are served with nosniff.
 */
describe('the dashboard headers', () => {
  let built: Gateway;
  let builtUrl: string;
  let builtDir: string;

  beforeAll(async () => {
    builtDir = mkdtempSync(join(tmpdir(), 'tollgate-dash-built-'));
    mkdirSync(join(builtDir, 'dist', 'assets'), { recursive: true });
    writeFileSync(join(builtDir, 'dist', 'index.html'), '<!doctype html><title>tollgate</title><script type="module" src="/assets/app-1.js"></script>');
    writeFileSync(join(builtDir, 'dist', 'assets', 'app-1.js'), 'console.log(1);');
    built = await createGateway({ config: { settings: { data_dir: builtDir } }, log: createLog('silent'), dashboardDir: join(builtDir, 'dist') });
    builtUrl = await built.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await built.close(100);
    rmSync(builtDir, { recursive: true, force: true });
  });

  it('forbids framing the page and its files by any site, and sniffing their type', async () => {
    for (const path of ['/', '/assets/app-1.js']) {
      const response = await fetch(`${builtUrl}${path}`);
      expect(response.status, path).toBe(200);
      const policy = response.headers.get('content-security-policy') ?? '';
      expect(policy, path).toContain("frame-ancestors 'none'");
      // Only the dashboard's own files run, and talk only to this gateway (no inline script, no eval).
      expect(policy, path).toContain("script-src 'self';");
      expect(policy, path).toContain("connect-src 'self'");
      expect(policy, path).toContain("base-uri 'none'");
      expect(policy, path).not.toContain('unsafe');
      expect(response.headers.get('x-frame-options'), path).toBe('DENY');
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
      await response.arrayBuffer();
    }
  });

  it('sends the same headers with the page that says the dashboard is not built', async () => {
    const response = await fetch(`${url}/`);
    expect(response.status).toBe(503);
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    await response.arrayBuffer();
  });
});
