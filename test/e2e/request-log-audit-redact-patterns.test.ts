import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// settings.log_bodies.redact runs the operator's patterns, unbounded, over every kept body and every failed request's
// message. One whose repetitions in a row can trade characters with something after them that can fail
// (`\S+@\S+\.com`) passed the backtracking check, and a body of 64 KB of `@` then held the event loop for minutes:
// refused now, naming the pattern and the way out, as the guardrails' patterns are.

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let admin: AdminClient;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } });
  admin = new AdminClient(tg.url);
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

describe('request-log redaction patterns', () => {
  it('refuses one whose repetitions trade characters, naming it and the way out', async () => {
    for (const pattern of ['\\S+@\\S+\\.com', '\\w+\\s?\\w+!', '.*token.*=']) {
      const refused = await admin.patch('/api/config', { settings: { log_bodies: { enabled: true, redact: [pattern] } } });
      expect(refused.status, pattern).toBe(400);
      expect(refused.body.error.message).toContain('settings.log_bodies.redact[0]');
      expect(refused.body.error.message).toContain('polynomial backtracking risk');
    }
  });

  it('accepts patterns whose repetitions cannot trade, and they redact kept bodies', async () => {
    const patterns = ['[^\\s@]+@[^\\s@]+\\.com', '\\S+@\\S+', 'secret-\\d+'];
    expect((await admin.patch('/api/config', { settings: { log_bodies: { enabled: true, redact: patterns } } })).status).toBe(200);
    const { response } = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'mail ann@example.com about secret-42' }] }).withResponse();
    const id = response.headers.get('x-request-id');
    const entry = await admin.get(`/api/logs/${id}`);
    expect(entry.status).toBe(200);
    const kept = JSON.stringify(entry.body);
    expect(kept).not.toContain('ann@example.com');
    expect(kept).not.toContain('secret-42');
  });
});
