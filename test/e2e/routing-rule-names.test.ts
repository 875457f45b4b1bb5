import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A routing rule's name goes out in the x-tollgate-routing-rule header of every answer it routes. A name Node refuses
 * in a header (an arrow, a dash above U+00FF, a line break) was taken, and then every request the rule matched was
 * answered 500 Internal gateway error. Such a name is refused when the rule is configured, saying why.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up' } } });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

const ask = { model: 'fast', messages: [{ role: 'user' as const, content: 'hi' }] };

describe('a routing rule name', () => {
  it('that Node cannot send in a header is refused when configured, with the reason', async () => {
    const { api } = gatewayApi(() => tg.url);
    for (const name of ['fast → mini', 'schnell – mini', 'line\r\nbreak']) {
      const refused = await api('PATCH', '/api/config', { routing_rules: [{ name, when: { model: 'fast' }, route_to: 'openai/gpt-4o-mini' }] });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.body)).toMatch(/routing_rules.*name/);
      expect(JSON.stringify(refused.body)).toMatch(/HTTP header/);
    }
  });

  it('that Node can send routes the request and is named in the answer', async () => {
    const { api } = gatewayApi(() => tg.url);
    const name = 'fast to mini (é)';
    expect((await api('PATCH', '/api/config', { routing_rules: [{ name, when: { model: 'fast' }, route_to: 'openai/gpt-4o-mini' }] })).status).toBe(200);
    const client = new OpenAI({ apiKey: 'none', baseURL: `${tg.url}/v1`, maxRetries: 0 });
    const { data, response } = await client.chat.completions.create(ask).withResponse();
    expect(data.choices[0]?.message.content).toBe('echo: hi');
    expect(Buffer.from(response.headers.get('x-tollgate-routing-rule') ?? '', 'latin1').toString('latin1')).toBe(name);
  });
});
