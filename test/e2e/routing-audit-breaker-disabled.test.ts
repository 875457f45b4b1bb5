import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayEvents } from '../../src/core/events.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { jsonRequest } from '../helpers/api.js';

// An operator who turns a route's breaker off live (the target healed, or the breaker was too eager) must see it
// closed once the target answers again: health view, metrics and the breaker alert, which resolves on breaker.closed.
let upstream: ScriptedUpstream;

beforeAll(async () => {
  upstream = await startOpenAIUpstream();
});
afterAll(async () => {
  await upstream.close();
});

const chat = (url: string, model: string): Promise<Response> =>
  fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });

describe('a breaker turned off while open', () => {
  it('reports closed, and says breaker.closed, once a call through it succeeds', async () => {
    const route = { targets: [{ model: 'solo/m', weight: 1 }], retry: { max_attempts: 1 } };
    const tg = await startGateway({
      providers: { solo: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-test' } },
      routes: { guarded: { ...route, breaker: { consecutive_failures: 1, cooldown_ms: 60_000 } } },
    });
    try {
      const closed: Array<GatewayEvents['breaker.closed']> = [];
      tg.gateway.bus.on('breaker.closed', (event) => closed.push(event));
      upstream.setMode({ kind: 'error', status: 500 });
      expect((await chat(tg.url, 'guarded')).status).toBe(500);
      expect((await chat(tg.url, 'guarded')).status).toBe(503);

      expect((await jsonRequest(tg.url, 'PUT', '/api/routes/guarded', { ...route, breaker: { enabled: false } })).status).toBe(200);
      upstream.setMode({ kind: 'ok' });
      const answered = await chat(tg.url, 'guarded');
      expect(answered.status).toBe(200);
      await answered.arrayBuffer();

      const view = await jsonRequest(tg.url, 'GET', '/api/routes/guarded/health');
      expect(view.body.groups[0].targets[0].breaker).toMatchObject({ state: 'closed', half_opens_at: null });
      expect(closed.map((event) => event.label)).toEqual(['solo/m']);
      const metrics = await (await fetch(`${tg.url}/metrics`)).text();
      expect(metrics).toContain('tollgate_breaker_state{provider="solo",model="m"} 0');
      expect(metrics).toContain('tollgate_provider_healthy{provider="solo"} 1');
    } finally {
      await tg.stop();
    }
  });
});
