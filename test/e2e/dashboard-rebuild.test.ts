import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DASHBOARD_DIR } from '../../src/http/dashboard-route.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/**
 * `npm run build:dashboard` while a gateway serves the dashboard (what the not-built page tells users to do, with
 * no restart): `/` keeps answering the page throughout, never the not-built 503, and the build leaves a dist/ whose
 * page names bundles that exist. The build runs in its own process, as the npm script does, so the gateway in this
 * one keeps answering while it runs.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DASHBOARD = join(ROOT, 'dashboard');

let tg: RunningGateway;

function build(): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/dashboard-build.ts', '--force'], { cwd: ROOT, stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', resolve);
  });
}

beforeAll(async () => {
  tg = await startGateway();
});
afterAll(async () => {
  await tg?.stop();
});

describe('rebuilding the dashboard under a running gateway', () => {
  it('keeps / answering the page through two builds at once, and leaves a whole build', { timeout: 90_000 }, async () => {
    const statuses = new Map<number, number>();
    let building = true;
    const poll = (async () => {
      while (building) {
        const response = await fetch(`${tg.url}/`);
        await response.arrayBuffer();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      }
    })();
    // Two at once, as two browser test files that each find the build stale.
    const exits = await Promise.all([build(), build()]);
    building = false;
    await poll;
    expect(exits).toEqual([0, 0]);
    expect(Object.fromEntries(statuses)).toEqual({ 200: expect.any(Number) });
    // The builds took seconds: the page was asked for many times while they wrote.
    expect(statuses.get(200)).toBeGreaterThan(50);

    const page = readFileSync(join(DEFAULT_DASHBOARD_DIR, 'index.html'), 'utf8');
    const bundles = [...page.matchAll(/\/assets\/([^"]+)"/g)].map((match) => match[1] as string);
    expect(bundles.length).toBeGreaterThan(0);
    for (const bundle of bundles) expect(existsSync(join(DEFAULT_DASHBOARD_DIR, 'assets', bundle)), bundle).toBe(true);
    expect((await fetch(`${tg.url}/assets/${bundles[0]}`)).status).toBe(200);
    // Each build's own folder is gone.
    expect(readdirSync(DASHBOARD).filter((name) => name.startsWith('.build-'))).toEqual([]);
  });
});
