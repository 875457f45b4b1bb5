import { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';

// Which Azure OpenAI API a provider calls. Azure documents the v1 API (`{endpoint}/openai/v1/`, GA since August 2025)
// as the one that needs no dated api-version and takes today's fields; the last dated GA version, 2024-10-21, refuses
// reasoning_effort (added in 2024-12-01-preview), which o-series and gpt-5 deployments need. A provider without an
// api_version calls the v1 API; an operator's api_version (config or AZURE_OPENAI_API_VERSION) is kept as written.

const KEY = 'azure-upstream-key';
let upstream: AzureUpstream;
let tg: RunningGateway;
let pinnedByEnv: RunningGateway;

beforeAll(async () => {
  upstream = await startAzureUpstream({ apiKey: KEY, deployments: { 'o4-mini': 'o4-mini-2025-04-16', 'embed-small': 'text-embedding-3-small' } });
  const settings = { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } };
  tg = await startGateway({
    providers: {
      azure: { base_url: upstream.url, api_key: KEY },
      'azure-dated': { type: 'azure', base_url: upstream.url, api_key: KEY, api_version: '2024-10-21' },
    },
    settings,
  });
  pinnedByEnv = await startGateway({ settings }, { AZURE_OPENAI_ENDPOINT: upstream.url, AZURE_OPENAI_API_KEY: KEY, AZURE_OPENAI_API_VERSION: '2025-04-01-preview' });
});

afterAll(async () => {
  await tg?.stop();
  await pinnedByEnv?.stop();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

const messages = [{ role: 'user' as const, content: 'think about it' }];

describe('azure api version', () => {
  it('calls the v1 API when no api_version is set, so an o-series deployment takes reasoning_effort', async () => {
    const completion = await tg.client.chat.completions.create({ model: 'azure/o4-mini', messages, reasoning_effort: 'high', max_completion_tokens: 200 });
    expect(completion.choices[0]?.message.content).toBe('echo: think about it');
    const call = upstream.calls[0];
    expect(call?.path).toBe('/openai/v1/chat/completions');
    expect(call?.apiVersion).toBeNull();
    expect(call?.body).toMatchObject({ model: 'o4-mini', reasoning_effort: 'high', max_completion_tokens: 200 });

    upstream.reset();
    const stream = await tg.client.chat.completions.create({ model: 'azure/o4-mini', messages, stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.at(-1)?.usage?.total_tokens).toBeGreaterThan(0);
    expect(upstream.calls[0]?.path).toBe('/openai/v1/chat/completions');

    upstream.reset();
    await tg.client.embeddings.create({ model: 'azure/embed-small', input: 'v1' });
    expect(upstream.calls[0]?.path).toBe('/openai/v1/embeddings');
    expect(upstream.calls[0]?.body.model).toBe('embed-small');
  });

  it("keeps an operator's dated api_version as written, on the deployment path", async () => {
    const error = await tg.client.chat.completions.create({ model: 'azure-dated/o4-mini', messages, reasoning_effort: 'high' }).catch((err: unknown) => err);
    // The version the operator chose refuses the field, as Azure does; the gateway does not second-guess it.
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(400);
    expect(upstream.calls[0]?.path).toBe('/openai/deployments/o4-mini/chat/completions');
    expect(upstream.calls[0]?.apiVersion).toBe('2024-10-21');

    upstream.reset();
    const pinned = await pinnedByEnv.client.chat.completions.create({ model: 'azure/o4-mini', messages, reasoning_effort: 'low' });
    expect(pinned.choices[0]?.message.content).toBe('echo: think about it');
    expect(upstream.calls[0]?.path).toBe('/openai/deployments/o4-mini/chat/completions');
    expect(upstream.calls[0]?.apiVersion).toBe('2025-04-01-preview');
  });

});
