import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { type RuntimeConfig } from '../../src/core/config.js';
import type { ConfigDocument } from '../../src/config/schema.js';
import { placePlugins } from '../../src/pipeline/placement.js';
import { PluginHost } from '../../src/pipeline/plugin-host.js';
import { serviceKey } from '../../src/core/plugin.js';
import { BUS, HEALTH, ServiceRegistry } from '../../src/services.js';
import { createLog } from '../../src/log.js';

const BUILTINS = ['auth', 'rate-limit', 'route', 'spend', 'call'];
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-plugin-loader-'));
  writeFileSync(
    join(dir, 'needs-bus.mjs'),
    `export default { name: 'needs-bus', requires: [{ id: 'bus' }], create(_o, _c, services) {
       services.get({ id: 'bus' });
       services.get({ id: 'health' });
       return null;
     } };\n`,
  );
  writeFileSync(join(dir, 'wants-db.mjs'), `export default { name: 'wants-db', requires: [{ id: 'vector-db' }], create: () => null };\n`);
  writeFileSync(join(dir, 'not-a-plugin.mjs'), `export default { hello: 'world' };\n`);
  writeFileSync(join(dir, 'syntax.mjs'), `export default {;\n`);
  writeFileSync(join(dir, 'bad-create.mjs'), `export default { name: 'bad-create', create: () => 42 };\n`);
  writeFileSync(join(dir, 'ok.mjs'), `export default { name: 'ok', placement: { after: 'auth' }, create: () => ({ name: 'ok', run: (ctx, next) => next() }) };\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configWith(plugins: ConfigDocument['plugins']): RuntimeConfig {
  return resolveRuntimeConfig({ api: {}, file: { plugins } }, {}, 1);
}

function host(): PluginHost {
  const services = new ServiceRegistry().set(BUS, new EventBus());
  return new PluginHost({ services, builtins: BUILTINS, baseDir: dir, cwd: dir, log: createLog('silent') });
}

describe('placePlugins', () => {
  const at = (name: string, placement = {}) => ({ name, placement, where: `plugins.${name}.placement` });

  it('puts plugins just before call by default, in listing order', () => {
    expect(placePlugins(BUILTINS, [at('a'), at('b')])).toEqual(['auth', 'rate-limit', 'route', 'spend', 'a', 'b', 'call']);
  });

  it('honours after and before, and plugins placed relative to later-listed plugins', () => {
    expect(placePlugins(BUILTINS, [at('x', { after: 'y' }), at('y', { after: 'auth' }), at('z', { before: 'spend' })])).toEqual([
      'auth', 'y', 'x', 'rate-limit', 'route', 'z', 'spend', 'call',
    ]);
    expect(placePlugins(BUILTINS, [at('a', { after: 'auth' }), at('b', { after: 'auth' })]).slice(0, 3)).toEqual(['auth', 'a', 'b']);
  });

  it('refuses unknown names, cycles, itself and an after that comes later than the before', () => {
    expect(() => placePlugins(BUILTINS, [at('a', { after: 'nope' })])).toThrow(/"nope" is neither a pipeline stage/);
    expect(() => placePlugins(BUILTINS, [at('a', { after: 'b' }), at('b', { after: 'a' })])).toThrow(/cycle/);
    expect(() => placePlugins(BUILTINS, [at('a', { before: 'a' })])).toThrow(/itself/);
    expect(() => placePlugins(BUILTINS, [at('a', { after: 'route', before: 'auth' })])).toThrow(/does not come before/);
  });

  it('refuses a plugin placed after call, where no request would ever reach it', () => {
    expect(() => placePlugins(BUILTINS, [at('a', { after: 'call' })])).toThrow(expect.objectContaining({ field: 'plugins.a.placement.after', message: expect.stringMatching(/after "call"/) }));
    // Also behind another plugin that is after call, whichever is listed first.
    expect(() => placePlugins(BUILTINS, [at('b', { before: 'a' }), at('a', { after: 'call' })])).toThrow(/after "call"/);
    expect(placePlugins(BUILTINS, [at('a', { before: 'call' })]).slice(-2)).toEqual(['a', 'call']);
  });
});

describe('PluginHost.compile', () => {
  it('gives a plugin only the services it requires, and says so when it asks for another', async () => {
    await expect(host().compile(configWith([{ name: 'needs-bus', path: 'needs-bus.mjs' }]))).rejects.toThrow(
      /plugins\.0: plugin "needs-bus" failed to create its stage: plugin "needs-bus" asked for service "health" without listing it in requires/,
    );
  });

  it('refuses a plugin that requires a service the gateway does not have', async () => {
    await expect(host().compile(configWith([{ name: 'wants-db', path: 'wants-db.mjs' }]))).rejects.toThrow(/requires service "vector-db"/);
  });

  it('names the field when the module is missing, broken, or not a plugin', async () => {
    await expect(host().compile(configWith([{ name: 'a', path: 'missing.mjs' }]))).rejects.toThrow(/^plugins\.0\.path: no such file/);
    await expect(host().compile(configWith([{ name: 'a', path: 'syntax.mjs' }]))).rejects.toThrow(/^plugins\.0\.path: cannot load plugin "a"/);
    await expect(host().compile(configWith([{ name: 'a', path: 'not-a-plugin.mjs' }]))).rejects.toThrow(/^plugins\.0\.path: .* must export a plugin/);
    await expect(host().compile(configWith([{ name: 'a', package: 'no-such-tollgate-plugin' }]))).rejects.toThrow(/^plugins\.0\.package: cannot find package/);
    await expect(host().compile(configWith([{ name: 'a', path: 'bad-create.mjs' }]))).rejects.toThrow(/create\(\) must return a stage/);
  });

  it('orders the stages by the plugin\'s own placement unless the config gives one', async () => {
    const own = await host().compile(configWith([{ name: 'ok', path: 'ok.mjs' }]));
    expect(own.plugins.order.slice(0, 2)).toEqual(['auth', 'ok']);
    const moved = await host().compile(configWith([{ name: 'ok', path: 'ok.mjs', placement: { before: 'call' } }]));
    expect(moved.plugins.order.slice(-2)).toEqual(['ok', 'call']);
  });
});

describe('ServiceRegistry', () => {
  it('answers by key id and only the keys a plugin listed', () => {
    const bus = new EventBus();
    const services = new ServiceRegistry().set(BUS, bus).scoped('p', [BUS]);
    expect(services.get(BUS)).toBe(bus);
    expect(services.get(serviceKey<EventBus>('bus'))).toBe(bus);
    expect(services.has(HEALTH)).toBe(false);
    expect(() => services.get(HEALTH)).toThrow('plugin "p" asked for service "health" without listing it in requires (it lists: bus)');
  });
});
