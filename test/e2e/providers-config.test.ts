import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { loadConfigFile } from '../../src/config/load-file.js';
import type { GatewayEvents } from '../../src/core/events.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

let keyed: ScriptedUpstream;
let open: ScriptedUpstream;

beforeAll(async () => {
  keyed = await startOpenAIUpstream({ apiKey: 'sk-env-key' });
  open = await startOpenAIUpstream({ apiKey: null });
});
afterAll(async () => {
  await keyed.close();
  await open.close();
});
beforeEach(() => {
  keyed.reset();
  open.reset();
});

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hello' }];

async function withGateway(
  config: Parameters<typeof startGateway>[0],
  env: Record<string, string>,
  body: (tg: RunningGateway) => Promise<void>,
): Promise<void> {
  const tg = await startGateway(config, env);
  try {
    await body(tg);
  } finally {
    await tg.stop();
  }
}

describe('provider keys and base URLs', () => {
  it('reads OPENAI_API_KEY and OPENAI_BASE_URL from the environment with no config file', async () => {
    await withGateway({}, { OPENAI_API_KEY: 'sk-env-key', OPENAI_BASE_URL: `${keyed.url}/v1` }, async (tg) => {
      const completion = await tg.client.chat.completions.create({ model: 'openai/gpt-4o', messages });
      expect(completion.choices[0]?.message.content).toBe('echo: hello');
      expect(keyed.calls[0]?.headers.authorization).toBe('Bearer sk-env-key');
    });
  });

  it('reads <PROVIDER>_API_KEY and <PROVIDER>_BASE_URL for the other vendors', async () => {
    await withGateway({}, { GROQ_API_KEY: 'sk-env-key', GROQ_BASE_URL: `${keyed.url}/v1` }, async (tg) => {
      const completion = await tg.client.chat.completions.create({ model: 'groq/llama-3.3-70b-versatile', messages });
      expect(completion.model).toBe('groq/llama-3.3-70b-versatile');
      expect(keyed.calls[0]?.body.model).toBe('llama-3.3-70b-versatile');
    });
  });

  it('lets a client bring its own provider key in x-tollgate-provider-key when none is configured', async () => {
    await withGateway({}, { TOGETHER_BASE_URL: `${keyed.url}/v1` }, async (tg) => {
      const client = new OpenAI({
        baseURL: `${tg.url}/v1`,
        apiKey: 'not-forwarded',
        maxRetries: 0,
        defaultHeaders: { 'x-tollgate-provider-key': 'sk-env-key' },
      });
      await client.chat.completions.create({ model: 'together/meta-llama/Llama-3-8b-chat-hf', messages });
      expect(keyed.calls[0]?.headers.authorization).toBe('Bearer sk-env-key');
      expect(keyed.calls[0]?.body.model).toBe('meta-llama/Llama-3-8b-chat-hf');
      expect(JSON.stringify(keyed.calls[0]?.headers)).not.toContain('not-forwarded');
    });
  });

  it("sends a client's own key to one service only: a fallback to another keyless provider is left out", async () => {
    const config = {
      providers: {
        first: { type: 'openai', base_url: `${keyed.url}/v1` },
        // Another server, keyless too: the client's key is not for it.
        second: { type: 'openai', base_url: `${open.url}/v1` },
      },
      routes: { chat: { targets: [{ model: 'first/m' }], fallbacks: ['second/m'], retry: { max_attempts: 2, initial_delay_ms: 0 } } },
    };
    await withGateway(config, {}, async (tg) => {
      const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { 'x-tollgate-provider-key': 'sk-env-key' } });
      keyed.enqueue({ kind: 'error', status: 500 });
      const answer = await client.chat.completions.create({ model: 'chat', messages });
      expect(answer.choices[0]?.finish_reason).toBe('stop');
      // The second attempt went to the same service again, never to the fallback's server with the client's key.
      expect(keyed.calls.map((call) => call.headers.authorization)).toEqual(['Bearer sk-env-key', 'Bearer sk-env-key']);
      expect(open.calls).toHaveLength(0);
    });
  });

  it('prefers the configured key over a client-supplied one', async () => {
    await withGateway({}, { OPENAI_API_KEY: 'sk-env-key', OPENAI_BASE_URL: `${keyed.url}/v1` }, async (tg) => {
      const client = new OpenAI({
        baseURL: `${tg.url}/v1`,
        apiKey: 'x',
        maxRetries: 0,
        defaultHeaders: { 'x-tollgate-provider-key': 'sk-client' },
      });
      await client.chat.completions.create({ model: 'openai/gpt-4o', messages });
      expect(keyed.calls[0]?.headers.authorization).toBe('Bearer sk-env-key');
    });
  });

  it('calls keyless local servers (ollama, vllm) without a key', async () => {
    await withGateway({}, { OLLAMA_BASE_URL: `${open.url}/v1`, VLLM_BASE_URL: `${open.url}/v1` }, async (tg) => {
      await tg.client.chat.completions.create({ model: 'ollama/llama3.2', messages });
      await tg.client.chat.completions.create({ model: 'vllm/Qwen/Qwen2.5-7B-Instruct', messages });
      expect(open.calls.map((call) => call.body.model)).toEqual(['llama3.2', 'Qwen/Qwen2.5-7B-Instruct']);
      expect(open.calls[0]?.headers.authorization).toBeUndefined();
    });
  });

  it('applies vendor quirks: mistral gets max_tokens and random_seed', async () => {
    await withGateway({ providers: { mistral: { base_url: `${keyed.url}/v1`, api_key: 'sk-env-key' } } }, {}, async (tg) => {
      await tg.client.chat.completions.create({ model: 'mistral/mistral-small-latest', messages, max_completion_tokens: 20, seed: 7 });
      const body = keyed.calls[0]?.body;
      expect(body.max_tokens).toBe(20);
      expect(body.random_seed).toBe(7);
      expect(body.max_completion_tokens).toBeUndefined();
      expect(body.seed).toBeUndefined();
    });
  });

  it('serves custom providers of a known type under their own name, with extra headers', async () => {
    const config = {
      providers: {
        'lab-a': { type: 'openai', base_url: `${open.url}/v1`, headers: { 'x-lab': 'a' } },
        'lab-b': { type: 'openai', base_url: `${keyed.url}/v1`, keys: [{ value: 'sk-env-key', weight: 1 }] },
      },
    };
    await withGateway(config, {}, async (tg) => {
      const a = await tg.client.chat.completions.create({ model: 'lab-a/my-model', messages });
      const b = await tg.client.chat.completions.create({ model: 'lab-b/my-model', messages });
      expect(a.model).toBe('lab-a/my-model');
      expect(b.model).toBe('lab-b/my-model');
      expect(open.calls[0]?.headers['x-lab']).toBe('a');
      expect(keyed.calls[0]?.headers.authorization).toBe('Bearer sk-env-key');
    });
  });

  it('loads tollgate.config.yaml named by TOLLGATE_CONFIG, resolving env: references', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
    try {
      const path = join(dir, 'gateway.yaml');
      writeFileSync(
        path,
        ['providers:', '  openai:', `    base_url: ${keyed.url}/v1`, '    api_key: env:MY_UPSTREAM_KEY', '    models: [house-model]', ''].join('\n'),
      );
      const env = { TOLLGATE_CONFIG: path, MY_UPSTREAM_KEY: 'sk-env-key' };
      const loaded = loadConfigFile(env);
      expect(loaded.path).toBe(path);
      await withGateway(loaded.config, env, async (tg) => {
        await tg.client.chat.completions.create({ model: 'openai/house-model', messages });
        expect(keyed.calls[0]?.headers.authorization).toBe('Bearer sk-env-key');
        const ids: string[] = [];
        for await (const model of tg.client.models.list()) ids.push(model.id);
        expect(ids).toContain('openai/house-model');
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('events', () => {
  it('emits the request lifecycle on the bus', async () => {
    await withGateway({ providers: { openai: { base_url: `${keyed.url}/v1`, api_key: 'sk-env-key' } } }, {}, async (tg) => {
      const seen: Array<{ name: keyof GatewayEvents; payload: unknown }> = [];
      const names: Array<keyof GatewayEvents> = ['request.received', 'stage.completed', 'provider.attempted', 'request.completed', 'request.failed'];
      for (const name of names) tg.gateway.bus.on(name, (payload) => seen.push({ name, payload }));

      await tg.client.chat.completions.create({ model: 'openai/gpt-4o', messages });
      const stages = (list: typeof seen) =>
        list.filter((event) => event.name === 'stage.completed').map((event) => event.payload as GatewayEvents['stage.completed']);
      const lifecycle = (list: typeof seen) => list.filter((event) => event.name !== 'stage.completed').map((event) => event.name);
      expect(lifecycle(seen)).toEqual(['request.received', 'provider.attempted', 'request.completed']);
      // Request side in pipeline order; each outer stage passed, the call stage answered. The stages with nothing to do
      // for an anonymous request with no guardrail rule and the cache off (rate-limit, guardrails, cache) passed it by.
      expect(stages(seen).map((event) => [event.stage, event.outcome])).toEqual([
        ['auth', 'passed'],
        ['route', 'passed'],
        ['spend', 'passed'],
        ['call', 'answered'],
      ]);
      const completed = seen.at(-1)?.payload as GatewayEvents['request.completed'];
      expect(completed).toMatchObject({ model: 'openai/gpt-4o', provider: 'openai', upstreamModel: 'gpt-4o', status: 200, cancelled: false });
      expect(completed.usage?.input_tokens).toBeGreaterThan(0);
      expect(completed.costUsd).toBeGreaterThan(0);
      expect(seen.find((event) => event.name === 'provider.attempted')?.payload).toMatchObject({ provider: 'openai', ok: true, status: 200, attempt: 1 });

      seen.length = 0;
      // A 500 is retried (three attempts by default) before the request fails.
      const nope = { kind: 'error', status: 500, message: 'nope' } as const;
      keyed.enqueue(nope, nope, nope);
      await expect(tg.client.chat.completions.create({ model: 'openai/gpt-4o', messages })).rejects.toThrow();
      expect(lifecycle(seen)).toEqual(['request.received', 'provider.attempted', 'provider.attempted', 'provider.attempted', 'request.failed']);
      expect(seen.at(-1)?.payload).toMatchObject({ status: 500, provider: 'openai' });
      expect(stages(seen).at(-1)).toMatchObject({ stage: 'call', outcome: 'failed' });
      expect(seen.find((event) => event.name === 'provider.attempted')?.payload).toMatchObject({ ok: false, status: 500 });
      // Neither the provider key nor the client key appears in any event.
      expect(JSON.stringify(seen)).not.toContain('sk-env-key');
    });
  });
});
