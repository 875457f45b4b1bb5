import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A model name is the provider's, any characters: a route target `openai/gpt—x` (an em dash). (A client's own model
 * name is refused unless printable ASCII.) It goes out in x-tollgate-model, and Node refuses a header character above U+00FF, so every such
 * request was answered 500 Internal gateway error. The header now carries the name percent-encoded (UTF-8) where
 * Node would refuse it, while the provider gets the name unchanged.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up', chunkDelayMs: 0 });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up' } },
    routes: {
      dashed: { targets: [{ model: 'openai/gpt—x', weight: 1 }] },
      kana: { targets: [{ model: 'openai/モデル', weight: 1 }] },
      accented: { targets: [{ model: 'openai/modèle 100% – v2', weight: 1 }] },
    },
    cache: { mode: 'on', semantic: { enabled: false } },
  });
  client = new OpenAI({ apiKey: 'none', baseURL: `${tg.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

const ask = (model: string, content: string) => ({ model, messages: [{ role: 'user' as const, content }] });

describe('a model name Node cannot send in a header', () => {
  it('of a route target answers, the header percent-encoded and the provider given the name unchanged', async () => {
    const { data, response } = await client.chat.completions.create(ask('dashed', 'hi')).withResponse();
    expect(data.choices[0]?.message.content).toBe('echo: hi');
    expect(upstream.calls.at(-1)?.body.model).toBe('gpt—x');
    expect(response.headers.get('x-tollgate-model')).toBe('gpt%E2%80%94x');
    expect(decodeURIComponent(response.headers.get('x-tollgate-model') ?? '')).toBe('gpt—x');
    expect(response.headers.get('x-tollgate-provider')).toBe('openai');
    expect(response.headers.get('x-tollgate-route')).toBe('dashed');
  });

  it('answers streamed and whole, and from the cache', async () => {
    const stream = await client.chat.completions.create({ ...ask('kana', 'stream me'), stream: true }).withResponse();
    expect(stream.response.headers.get('x-tollgate-model')).toBe(encodeURIComponent('モデル'));
    let text = '';
    for await (const chunk of stream.data) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: stream me');
    expect(upstream.calls.at(-1)?.body.model).toBe('モデル');

    const first = await client.chat.completions.create(ask('accented', 'whole')).withResponse();
    expect(first.data.choices[0]?.message.content).toBe('echo: whole');
    // Encoded whole when anything is (the % too), so decodeURIComponent always gives the name back.
    expect(decodeURIComponent(first.response.headers.get('x-tollgate-model') ?? '')).toBe('modèle 100% – v2');
    let hit = first;
    for (let i = 0; i < 40 && hit.response.headers.get('x-tollgate-cache') !== 'hit-exact'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      hit = await client.chat.completions.create(ask('accented', 'whole')).withResponse();
    }
    expect(hit.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(decodeURIComponent(hit.response.headers.get('x-tollgate-model') ?? '')).toBe('modèle 100% – v2');
  });

  it('keeps a name Node can send as it is', async () => {
    const { response } = await client.chat.completions.create(ask('openai/gpt-4o-mini', 'plain')).withResponse();
    expect(response.headers.get('x-tollgate-model')).toBe('gpt-4o-mini');
  });
});
