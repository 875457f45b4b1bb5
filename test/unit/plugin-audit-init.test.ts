import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import type { ConfigDocument } from '../../src/config/schema.js';
import { createLog } from '../../src/log.js';
import { PluginHost } from '../../src/pipeline/plugin-host.js';
import { BUS, ServiceRegistry } from '../../src/services.js';

/** A module loaded again while its timed-out init still runs (see test/e2e/plugin-audit-contract.test.ts), at the host. */

interface Probe {
  calls: number;
  closes: number;
  resolve: (() => void) | null;
}
const probe = (): Probe => (globalThis as unknown as { __hostInitProbe: Probe }).__hostInitProbe;
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-plugin-init-'));
  writeFileSync(
    join(dir, 'slow.mjs'),
    `const probe = () => globalThis.__hostInitProbe;
    export default {
      name: 'slow',
      init() { probe().calls++; return new Promise((resolve) => { probe().resolve = resolve; }); },
      create: () => null,
      close() { probe().closes++; },
    };`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const configWith = (plugins: ConfigDocument['plugins']) => resolveRuntimeConfig({ api: {}, file: { plugins } }, {}, 1);
const timers = (): number => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

it('runs one init per module at a time, the second load taking the first one\'s outcome, and leaves no timer behind', async () => {
  (globalThis as unknown as { __hostInitProbe: Probe }).__hostInitProbe = { calls: 0, closes: 0, resolve: null };
  const host = new PluginHost({ services: new ServiceRegistry().set(BUS, new EventBus()), builtins: ['auth', 'call'], baseDir: dir, cwd: dir, log: createLog('silent') });
  const before = timers();

  await expect(host.compile(configWith([{ name: 'slow', path: 'slow.mjs', init_timeout_ms: 50 }]))).rejects.toThrow(/within 50 ms \(init_timeout_ms\)/);
  const second = host.compile(configWith([{ name: 'slow', path: 'slow.mjs', init_timeout_ms: 10_000 }]));
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(probe().calls).toBe(1);
  probe().resolve?.();
  const compiled = await second;
  expect(probe()).toMatchObject({ calls: 1, closes: 0 });
  // Both loads' deadline timers are gone.
  expect(timers()).toBeLessThanOrEqual(before);

  await host.release(compiled.keys);
  expect(probe()).toMatchObject({ calls: 1, closes: 1 });
});
