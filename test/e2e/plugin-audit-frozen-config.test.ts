import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Every request of a config version shares one RuntimeConfig (`ctx.config`), and so does every plugin's create(). A
 * plugin is user code: whatever it writes there must not become the config of every other request, unversioned and
 * unaudited. Each write is tried from a real plugin in a running gateway, through the official OpenAI client.
 */

interface Attempt {
  what: string;
  error: string | null;
}
interface Probe {
  create: Attempt[];
  run: Attempt[];
}
const probe = (): Probe => (globalThis as unknown as { __frozenConfigProbe: Probe }).__frozenConfigProbe;

/** The writes a careless (or hostile) plugin might make, each caught and recorded with the error it met, if any. */
const WRITES = `
const writes = (config) => [
  ['settings.maxBodyBytes', () => { config.settings.maxBodyBytes = 1; }],
  ['config.settings replaced', () => { config.settings = {}; }],
  ["a provider's baseUrl", () => { config.providers.get('openai').baseUrl = 'http://127.0.0.1:9/v1'; }],
  ["a provider's keys", () => { config.providers.get('openai').keys.push({ id: 'stolen', value: 'sk-x' }); }],
  ['providers.set', () => { config.providers.set('evil', config.providers.get('openai')); }],
  ['providers.delete', () => { config.providers.delete('openai'); }],
  ['routes.set', () => { config.routes.set('evil', {}); }],
  ['routes.clear', () => { config.routes.clear(); }],
  ['settings.trustedProxies.add', () => { config.settings.trustedProxies.add('0.0.0.0'); }],
  ['plugins.push', () => { config.plugins.push({ name: 'evil' }); }],
  ['a new top-level field', () => { config.extra = true; }],
];
const attempt = (config) => writes(config).map(([what, write]) => {
  try {
    write();
    return { what, error: null };
  } catch (err) {
    return { what, error: err instanceof TypeError ? 'TypeError' : String(err) };
  }
});
`;

let upstream: ScriptedUpstream;
let dir: string;
let running: RunningGateway | null = null;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
  dir = mkdtempSync(join(tmpdir(), 'tollgate-frozen-config-'));
});
afterAll(async () => {
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await running?.stop();
  running = null;
});

describe('the config a plugin sees is read-only', () => {
  it('refuses every write through ctx.config and create()\'s config, and the next request runs on the config as configured', async () => {
    (globalThis as unknown as { __frozenConfigProbe: Probe }).__frozenConfigProbe = { create: [], run: [] };
    writeFileSync(
      join(dir, 'meddler.mjs'),
      `${WRITES}
      export default {
        name: 'meddler',
        create(options, config) {
          globalThis.__frozenConfigProbe.create = attempt(config);
          return {
            name: 'meddler',
            run(ctx, next) {
              if (globalThis.__frozenConfigProbe.run.length === 0) globalThis.__frozenConfigProbe.run = attempt(ctx.config);
              return next();
            },
          };
        },
      };\n`,
    );
    running = await startGateway(openAIConfig(upstream.url, { routes: { fast: { targets: [{ model: 'openai/gpt-4o-mini' }] } } }), {}, { configPath: join(dir, 'tollgate.yaml') });
    const { gateway, url, client } = running;
    const patched = await fetch(`${url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ plugins: [{ name: 'meddler', path: 'meddler.mjs' }] }) });
    expect(patched.status).toBe(200);
    const before = gateway.configService.current();
    const maxBodyBytes = before.settings.maxBodyBytes;
    const baseUrl = before.providers.get('openai')?.baseUrl;
    const keys = before.providers.get('openai')?.keys.length;

    const first = await client.chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'one' }] });
    expect(first.choices[0]?.message.content).toBe('echo: one');
    const refusedEverywhere = (attempts: Attempt[]) => attempts.map(({ what, error }) => ({ what, error }));
    expect(probe().run.length).toBeGreaterThan(0);
    expect(refusedEverywhere(probe().run)).toEqual(probe().run.map(({ what }) => ({ what, error: 'TypeError' })));
    expect(refusedEverywhere(probe().create)).toEqual(probe().create.map(({ what }) => ({ what, error: 'TypeError' })));

    // The running config is the one configured, and the next request runs on it: same upstream, same route.
    const after = gateway.configService.current();
    expect(after).toBe(before);
    expect(after.settings.maxBodyBytes).toBe(maxBodyBytes);
    expect(after.providers.get('openai')?.baseUrl).toBe(baseUrl);
    expect(after.providers.get('openai')?.keys.length).toBe(keys);
    expect(after.providers.has('evil')).toBe(false);
    expect(after.routes.has('fast')).toBe(true);
    expect(after.settings.trustedProxies.has('0.0.0.0')).toBe(false);
    expect(after.plugins.map((entry) => entry.name)).toEqual(['meddler']);
    const second = await client.chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'two' }] });
    expect(second.choices[0]?.message.content).toBe('echo: two');
  });
});
