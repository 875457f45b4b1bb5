import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// LiteLLM's `cache: {"namespace": "..."}` (docs.litellm.ai/docs/proxy/caching_controls) keeps a namespace's cached
// answers to itself, as tollgate's `x-tollgate-cache-namespace` does: a request is never served an answer another
// namespace (or no namespace) stored, and shares answers with requests of its own namespace.

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const stored = new Set<string>();

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-openai' } },
    cache: { mode: 'on', semantic: { enabled: false } },
  });
  tg.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

const litellm = (): OpenAI => new OpenAI({ baseURL: `${tg.url}/litellm`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });

/** Asks the question with LiteLLM's extra fields; the cache's verdict, the answer's request id and whether the provider was called. */
async function ask(extra: Record<string, unknown>): Promise<{ cache: string | null; id: string; called: boolean }> {
  const before = upstream.calls.length;
  const body = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'What is our refund policy?' }], ...extra };
  const { response } = await litellm().chat.completions.create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming).withResponse();
  return { cache: response.headers.get('x-tollgate-cache'), id: response.headers.get('x-request-id') ?? '', called: upstream.calls.length > before };
}

async function untilStored(id: string): Promise<void> {
  for (let i = 0; i < 100 && !stored.has(id); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(stored.has(id)).toBe(true);
}

describe("LiteLLM's cache namespace on /litellm", () => {
  it("is never served another namespace's answer, and shares its own", async () => {
    const plain = await ask({});
    expect(plain).toMatchObject({ cache: 'miss', called: true });
    await untilStored(plain.id);

    // Tenant A's and tenant B's questions go to the provider, though the same question is cached without a namespace.
    const tenantA = await ask({ cache: { namespace: 'tenant-a' } });
    expect(tenantA).toMatchObject({ cache: 'miss', called: true });
    await untilStored(tenantA.id);
    // As the OpenAI Python SDK's extra_body={"cache": ...} sends it, and as a raw extra_body.
    const tenantB = await ask({ extra_body: { cache: { namespace: 'tenant-b', ttl: 600 } } });
    expect(tenantB).toMatchObject({ cache: 'miss', called: true });
    await untilStored(tenantB.id);

    // Each namespace is served its own answer again, and so are requests without one.
    expect(await ask({ cache: { namespace: 'tenant-a' } })).toMatchObject({ cache: 'hit-exact', called: false });
    expect(await ask({ cache: { namespace: 'tenant-b' } })).toMatchObject({ cache: 'hit-exact', called: false });
    expect(await ask({})).toMatchObject({ cache: 'hit-exact', called: false });
    // An empty namespace is none, as with LiteLLM.
    expect(await ask({ cache: { namespace: '' } })).toMatchObject({ cache: 'hit-exact', called: false });
  });

  it('is the same as tollgate\'s x-tollgate-cache-namespace header, on /v1 too', async () => {
    const v1 = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
    const asked = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'What is our refund policy?' }] };
    const tenantA = await v1.chat.completions.create(asked, { headers: { 'x-tollgate-cache-namespace': 'tenant-a' } }).withResponse();
    expect(tenantA.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    const tenantC = await v1.chat.completions.create(asked, { headers: { 'x-tollgate-cache-namespace': 'tenant-c' } }).withResponse();
    expect(tenantC.response.headers.get('x-tollgate-cache')).toBe('miss');
  });

  it('refuses a namespace that is not a string', async () => {
    const refused = await ask({ cache: { namespace: 5 } }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('cache.namespace');
  });
});
