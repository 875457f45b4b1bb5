import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

describe('a provider key taken out of rotation', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    tg = await startGateway({});
  });
  afterAll(async () => {
    await tg.stop();
    await upstream.close();
  });

  it('is kept and shown, serves nothing while disabled, and serves again once enabled, without a restart', async () => {
    const { api } = gatewayApi(() => tg.url);
    expect((await api('PUT', '/api/providers/lab', { type: 'openai', base_url: `${upstream.url}/v1`, keys: [{ id: 'one', value: 'sk-lab-one' }, { id: 'two', value: 'sk-lab-two' }] })).status).toBeLessThan(300);
    const ask = { model: 'lab/m', messages: [{ role: 'user' as const, content: 'hi' }] };

    const disabled = await api('PATCH', '/api/providers/lab/keys/one', { disabled: true });
    expect(disabled.body).toMatchObject({ id: 'one', disabled: true });
    expect(JSON.stringify(disabled.body)).not.toContain('sk-lab-one');
    upstream.calls.length = 0;
    for (let i = 0; i < 6; i++) await tg.client.chat.completions.create(ask);
    expect(new Set(upstream.calls.map((call) => call.headers.authorization))).toEqual(new Set(['Bearer sk-lab-two']));

    await api('PATCH', '/api/providers/lab/keys/two', { disabled: true });
    await expect(tg.client.chat.completions.create(ask)).rejects.toMatchObject({ status: 401, code: 'provider_key_missing' });
    const view = (await api('GET', '/api/providers/lab')).body;
    expect(view.keys.map((key: { id: string; disabled?: boolean }) => [key.id, key.disabled ?? false])).toEqual([['one', true], ['two', true]]);

    const enabled = await api('PATCH', '/api/providers/lab/keys/one', { disabled: false });
    expect(enabled.body.disabled).toBeUndefined();
    upstream.calls.length = 0;
    await tg.client.chat.completions.create(ask);
    expect(upstream.calls[0]?.headers.authorization).toBe('Bearer sk-lab-one');
  });
});
