import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// LiteLLM's own request fields that the LiteLLM proxy reads and never sends upstream (all_litellm_params, its
// per-request logging callbacks' keys, the proxy's user_config and mock_testing_* switches). Several carry the
// client's secrets for someone else: no provider may get them, and a strict provider refuses the request for them.

/** What a LiteLLM client may send beside the OpenAI fields, as LiteLLM's docs and types name them. */
const LITELLM_ONLY = {
  // Clientside credentials (docs.litellm.ai/docs/proxy/clientside_auth): the user's own provider keys.
  user_config: { model_list: [{ model_name: 'user-azure', litellm_params: { model: 'azure/gpt-4o', api_key: 'sk-user-azure-secret' } }] },
  client_secret: 'azure-ad-client-secret',
  azure_password: 'azure-ad-password',
  // Per-request logging callbacks (docs.litellm.ai/docs/proxy/dynamic_logging), with the logging tools' keys.
  langfuse_public_key: 'pk-lf-public',
  langfuse_secret_key: 'sk-lf-secret',
  langfuse_host: 'https://langfuse.example',
  langsmith_api_key: 'lsv2-secret',
  turn_off_message_logging: true,
  litellm_disabled_callbacks: ['langfuse'],
  // LiteLLM's parameter handling, prompt management, pricing and test switches.
  allowed_openai_params: ['tools'],
  additional_drop_params: ['logit_bias'],
  prompt_version: 2,
  prompt_label: 'prod',
  input_cost_per_second: 0.001,
  mock_testing_rate_limit_error: false,
  merge_reasoning_content_in_choices: true,
};
const SECRETS = ['sk-user-azure-secret', 'azure-ad-client-secret', 'azure-ad-password', 'sk-lf-secret', 'lsv2-secret'];

let openai: ScriptedUpstream;
let mistral: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  // Mistral refuses any field it does not know with a 422 extra_forbidden, as its API does.
  mistral = await startOpenAIUpstream({ apiKey: 'sk-mistral', vendor: 'mistral' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
      mistral: { base_url: `${mistral.url}/v1`, api_key: 'sk-mistral' },
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await Promise.all([openai?.close(), mistral?.close()]);
});
beforeEach(() => {
  openai.reset();
  mistral.reset();
});

function client(): OpenAI {
  return new OpenAI({ baseURL: `${tg.url}/litellm`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
}

function expectNoneSent(raw: string | undefined, body: Record<string, unknown>): void {
  for (const field of Object.keys(LITELLM_ONLY)) expect(body).not.toHaveProperty(field);
  for (const secret of SECRETS) expect(raw).not.toContain(secret);
}

describe("LiteLLM's own fields on /litellm", () => {
  it('reach no provider, as top-level fields (how the OpenAI SDK sends extra_body) or in a raw extra_body', async () => {
    const asFields = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], temperature: 0.2, ...LITELLM_ONLY };
    const completion = await client().chat.completions.create(asFields as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    const inExtraBody = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], temperature: 0.2, extra_body: LITELLM_ONLY };
    await client().chat.completions.create(inExtraBody as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(openai.calls).toHaveLength(2);
    for (const call of openai.calls) {
      // The provider gets the OpenAI request, unchanged.
      expect(call.body).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], temperature: 0.2 });
      expectNoneSent(call.raw, call.body as Record<string, unknown>);
    }
  });

  it('do not make a provider that refuses unknown fields fail the request', async () => {
    const body = { model: 'mistral/mistral-small-latest', messages: [{ role: 'user', content: 'strict' }], ...LITELLM_ONLY };
    const completion = await client().chat.completions.create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(completion.choices[0]?.message.content).toBe('echo: strict');
    expect(mistral.calls).toHaveLength(1);
    expectNoneSent(mistral.calls[0]?.raw, mistral.calls[0]?.body as Record<string, unknown>);
  });

  it('reach no provider with an embeddings request either', async () => {
    const body = { model: 'text-embedding-3-small', input: 'embed me', ...LITELLM_ONLY };
    const embedding = await client().embeddings.create(body as unknown as OpenAI.EmbeddingCreateParams);
    expect(embedding.data).toHaveLength(1);
    expect(openai.calls[0]?.body).toMatchObject({ model: 'text-embedding-3-small', input: 'embed me' });
    expectNoneSent(openai.calls[0]?.raw, openai.calls[0]?.body as Record<string, unknown>);
  });
});
