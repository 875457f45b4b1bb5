import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Input the management API dropped without a word while answering success:
 * - `GET /api/models` ignored a query parameter it does not take, so a misspelt filter (`q` for `search`, as
 *   `/api/keys` spells it; `providers` for `provider`) answered the whole catalogue, unlike `/api/keys`, `/api/logs`,
 *   `/api/usage` and `/api/audit`, which refuse one with a 400 `invalid_query`;
 * - a write whose body held a member named `__proto__` below its top level (`{"routes": {"__proto__": {...}}}`)
 *   answered 200 with a new config version and an audit entry, and nothing of it applied (the config schema's
 *   records skip that name); at the top level, or in a URL (`PUT /api/routes/__proto__`), it was already a 400.
 */
let upstream: ScriptedUpstream;
let tg: RunningGateway;
let api: AdminClient;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
  tg = await startGateway(openAIConfig(upstream.url));
  api = new AdminClient(`${tg.url}/api`);
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

describe('GET /api/models', () => {
  it('refuses a query parameter it does not take, naming it', async () => {
    for (const [query, param] of [
      ['q=gpt-4o', 'q'],
      ['providers=openai', 'providers'],
      ['search=gpt&page=2', 'page'],
    ]) {
      const answer = await api.get(`/models?${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'invalid_query', param });
    }
    const filtered = await api.get('/models?provider=openai&search=gpt-4o-mini&limit=5&offset=0');
    expect(filtered.status).toBe(200);
    expect(filtered.body.data.length).toBeGreaterThan(0);
    expect(filtered.body.data.every((model: { id: string }) => model.id.startsWith('openai/') && model.id.includes('gpt-4o-mini'))).toBe(true);
  });
});

describe('a member named __proto__ in a write', () => {
  it('is a 400 naming where it is, and nothing is applied, versioned or audited', async () => {
    const version = (await api.get('/config')).body.version;
    const auditBefore = (await api.get('/audit')).body.data.length;
    // Raw JSON text: in an object literal `__proto__: x` sets the prototype, so JSON.stringify would leave it out.
    const lab = `"type": "openai", "base_url": "${upstream.url}/v1", "keys": [{"value": "sk-lab-0000000000"}]`;
    const writes: Array<[string, string, string, string | null, string | undefined]> = [
      ['PATCH', '/config', '{"routes": {"__proto__": {"targets": [{"model": "openai/gpt-4o-mini"}]}}}', 'routes.__proto__', undefined],
      // (merge-patch+json bodies go through fastify's own parser, which already refused one: 400 invalid_json.)
      ['PATCH', '/config', '{"routes": {"__proto__": {"targets": [{"model": "openai/gpt-4o-mini"}]}}}', null, 'application/merge-patch+json'],
      ['PUT', '/config', '{"providers": {"openai": {"headers": {"__proto__": "x"}}}}', 'providers.openai.headers.__proto__', undefined],
      ['PUT', '/providers/lab', `{${lab}, "headers": {"__proto__": "x"}}`, 'headers.__proto__', undefined],
      ['PUT', '/routes/chat', '{"targets": [{"model": "openai/gpt-4o-mini", "__proto__": {"weight": 5}}]}', 'targets.0.__proto__', undefined],
    ];
    for (const [method, path, raw, param, contentType] of writes) {
      const answer = await api.request(method, path, undefined, { raw, ...(contentType ? { contentType } : {}) });
      expect(answer.status, `${method} ${path} ${raw}`).toBe(400);
      if (param === null) continue;
      expect(answer.body.error.param, `${method} ${path}`).toBe(param);
      expect(answer.body.error.message).toContain('__proto__');
    }
    expect((await api.get('/config')).body.version).toBe(version);
    expect((await api.get('/audit')).body.data.length).toBe(auditBefore);
    expect((await api.get('/routes')).body.data).toEqual([]);
    expect((await api.get('/providers/lab')).status).toBe(404);
  });
});
