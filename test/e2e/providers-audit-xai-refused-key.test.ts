import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * xAI refuses a wrong or revoked API key with 400 Bad Request, not OpenAI's 401 ("An incorrect API key is supplied",
 * docs.x.ai/developers/debugging): `{"code":"Client specified an invalid argument","error":"Incorrect API key provided:
 * xa***ey. ..."}`. tollgate passes over a refused key of its config for the provider's other keys and the route's
 * fallbacks (see refused-provider-key.test.ts), which xAI's refusal, read as the client's bad request, never reached:
 * a revoked key in rotation failed its share of requests with a 400 the client could do nothing about.
 */

let xai: ScriptedUpstream;
let backup: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  xai = await startOpenAIUpstream({ apiKey: 'xai-good-key', vendor: 'xai' });
  backup = await startOpenAIUpstream({ apiKey: 'sk-backup' });
  tg = await startGateway({
    settings: { routing: { adaptive: false, breaker: { consecutive_failures: 2, cooldown_ms: 60_000 } } },
    providers: {
      xai: { base_url: `${xai.url}/v1`, keys: [{ id: 'revoked', value: 'xai-revoked-key' }, { id: 'good', value: 'xai-good-key' }] },
      'xai-lapsed': { type: 'xai', base_url: `${xai.url}/v1`, keys: [{ id: 'lapsed', value: 'xai-lapsed-key' }] },
      'xai-byok': { type: 'xai', base_url: `${xai.url}/v1` },
      'xai-ok': { type: 'xai', base_url: `${xai.url}/v1`, api_key: 'xai-good-key' },
      backup: { type: 'openai', base_url: `${backup.url}/v1`, api_key: 'sk-backup' },
    },
    routes: {
      grok: { targets: [{ model: 'xai-lapsed/grok-4' }], fallbacks: ['backup/gpt-4o-mini'] },
      'grok-ok': { targets: [{ model: 'xai-ok/grok-4' }], fallbacks: ['backup/gpt-4o-mini'] },
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await xai?.close();
  await backup?.close();
});
beforeEach(() => {
  xai.reset();
  backup.reset();
});

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hello' }];

describe("xAI's 400 to a wrong API key", () => {
  it("passes a revoked key of the config over for the provider's other key: every request is answered, and the key's breaker opens", async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0 });
    for (let i = 0; i < 8; i++) {
      const answer = await client.chat.completions.create({ model: 'xai/grok-4', messages });
      expect(answer.choices[0]?.finish_reason).toBe('stop');
    }
    const keys = xai.calls.map((call) => call.headers.authorization);
    expect(keys.filter((key) => key === 'Bearer xai-revoked-key')).toHaveLength(2);
    expect(keys.filter((key) => key === 'Bearer xai-good-key')).toHaveLength(8);
    const view = await jsonRequest(tg.url, 'GET', '/api/routes/xai/grok-4/health');
    const targets = (view.body as { groups: Array<{ targets: Array<{ key_id: string; breaker: { state: string } }> }> }).groups[0]?.targets ?? [];
    expect(Object.fromEntries(targets.map((target) => [target.key_id, target.breaker.state]))).toEqual({ revoked: 'open', good: 'closed' });
  });

  it('moves a route on to its fallback when its only key is refused', async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: 'grok', messages });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    expect(xai.calls.map((call) => call.headers.authorization)).toEqual(['Bearer xai-lapsed-key']);
    expect(backup.calls).toHaveLength(1);
  });

  it("reaches a client whose own key it was as the authentication error it is, in xAI's words", async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { 'x-tollgate-provider-key': 'xai-wrong-key' } });
    const error = await client.chat.completions.create({ model: 'xai-byok/grok-4', messages }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).message).toContain('Incorrect API key provided: xa***ey');
    expect(xai.calls).toHaveLength(1);
  });

  it("leaves xAI's other 400s the client's bad request, the fallback untried", async () => {
    xai.enqueue({ kind: 'raw', status: 400, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 'Client specified an invalid argument', error: 'Model grok-4 does not support parameter presencePenalty.' }) });
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const error = await client.chat.completions.create({ model: 'grok-ok', messages, presence_penalty: 1 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('does not support parameter presencePenalty');
    expect(xai.calls).toHaveLength(1);
    expect(backup.calls).toHaveLength(0);
  });
});
