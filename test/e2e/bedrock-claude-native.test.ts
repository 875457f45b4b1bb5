// Anthropic SDK -> tollgate /anthropic -> Claude on Amazon Bedrock (InvokeModel / InvokeModelWithResponseStream):
// the client's own Messages body goes through (minus `model` and `stream`, plus Bedrock's `anthropic_version`, its
// betas in the body), signed with SigV4, and Claude's answer comes back as it came but for the model name, so
// extended thinking with tools keeps its signatures across turns. Other clients of the same model still get Converse.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';
import { REDACTED_THINKING_TRIGGER, thinkingSignature } from '../upstream/anthropic-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

const MODEL_ID = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const MODEL = `bedrock/${MODEL_ID}`;
const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const API_KEY = 'ABSKQmVkcm9ja0FQSUtleS10ZXN0';
let bedrock: BedrockUpstream;
let tg: RunningGateway;
let client: Anthropic;

beforeAll(async () => {
  bedrock = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET, apiKey: API_KEY });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { bedrock: { base_url: bedrock.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' } },
    cache: { mode: 'on', semantic: { enabled: false } },
  });
  client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});
afterAll(async () => {
  await tg?.stop();
  await bedrock?.close();
});
beforeEach(() => bedrock.reset());

const weather: Anthropic.Tool = {
  name: 'weather',
  description: 'Weather for a city',
  input_schema: { type: 'object', properties: { query: { type: 'string' } } },
};
const thinking = { type: 'enabled', budget_tokens: 1024 } as const;

/** The request log entry of one request, once written. */
async function logOf(id: string): Promise<{ prompt_tokens: number; completion_tokens: number; cost_usd: number; provider: string }> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const response = await fetch(`${tg.url}/api/logs/${id}`);
    if (response.status === 200) return (await response.json()) as { prompt_tokens: number; completion_tokens: number; cost_usd: number; provider: string };
    if (Date.now() > deadline) throw new Error(`no log entry for ${id}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A gateway's request log entry of one request, whole, once written. */
async function logOfIn(gateway: RunningGateway, id: string): Promise<unknown> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const response = await fetch(`${gateway.url}/api/logs/${id}`);
    if (response.status === 200) return response.json();
    if (Date.now() > deadline) throw new Error(`no log entry for ${id}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The next turn of a tool loop: the assistant's answer as it came, then the tool's result. */
function nextTurn(ask: Anthropic.MessageParam[], first: Anthropic.Message): Anthropic.MessageParam[] {
  const use = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
  if (!use) throw new Error('expected a tool call');
  return [...ask, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }];
}

/** A raw streamed request to /anthropic, for reading the SSE frames as they were written. */
function rawStream(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${tg.url}/anthropic/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'client-side-key', 'anthropic-version': '2023-06-01', ...headers },
    body: JSON.stringify({ ...body, stream: true }),
  });
}

/** The `data:` of each SSE frame of a stream's text, and the event names. */
function framesOf(text: string): Array<{ event: string; data: string }> {
  return text
    .split('\n\n')
    .filter((frame) => frame.startsWith('event:'))
    .map((frame) => {
      const [event = '', data = ''] = frame.split('\n');
      return { event: event.slice('event: '.length), data: data.slice('data: '.length) };
    });
}

describe('Claude on Bedrock for an Anthropic client: native pass-through', () => {
  it('a whole tool loop with extended thinking: InvokeModel gets the client body, the signature comes back and is accepted next turn', async () => {
    const ask: Anthropic.MessageParam[] = [{ role: 'user', content: 'please use the tool for Paris' }];
    const first = await client.messages.create({ model: MODEL, max_tokens: 2000, thinking, tools: [weather], messages: ask, metadata: { user_id: 'u-1' } });
    const call = bedrock.calls.at(-1);
    expect(call?.path).toBe('/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke');
    // The client's body as it wrote it, without `model`, with Bedrock's version.
    expect(call?.body).toEqual({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 2000, thinking, tools: [weather], messages: ask, metadata: { user_id: 'u-1' } });
    // Claude's own message, exactly as Bedrock carried it but for the model.
    expect(first).toEqual({ ...bedrock.anthropic.sent.at(-1)?.message, model: MODEL });
    expect(first.content[0]).toEqual({ type: 'thinking', thinking: 'thinking about: please use the tool for Paris', signature: thinkingSignature('thinking about: please use the tool for Paris') });

    const messages = nextTurn(ask, first);
    const second = await client.messages.create({ model: MODEL, max_tokens: 2000, thinking, tools: [weather], messages });
    expect(second.stop_reason).toBe('end_turn');
    expect(bedrock.calls.at(-1)?.body.messages).toEqual(messages);
  });

  it('a streamed tool loop: the chunk events come as Claude sent them, and the next turn is accepted', async () => {
    const ask: Anthropic.MessageParam[] = [{ role: 'user', content: 'please use the tool for Rome' }];
    const first = await client.messages.stream({ model: MODEL, max_tokens: 2000, thinking, tools: [weather], messages: ask }).finalMessage();
    expect(bedrock.calls.at(-1)?.path).toBe('/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream');
    expect(bedrock.calls.at(-1)?.body).not.toHaveProperty('stream');
    const sent = bedrock.anthropic.sent.at(-1)?.message as Record<string, unknown>;
    expect(first.model).toBe(MODEL);
    expect(first.content).toEqual(sent.content);
    expect(first.usage).toEqual(sent.usage);

    const messages = nextTurn(ask, first);
    const raw = await rawStream({ model: MODEL, max_tokens: 2000, thinking, tools: [weather], messages });
    expect(raw.status).toBe(200);
    const frames = framesOf(await raw.text());
    // Event for event as Bedrock carried them (signature_delta, content_block_stop and the invocation metrics
    // included), each named by its type, message_start with the client's model name.
    const carried = bedrock.invokeEvents;
    expect(frames.map((frame) => frame.event)).toEqual(carried.map((json) => JSON.parse(json).type));
    expect(frames.slice(1).map((frame) => frame.data)).toEqual(carried.slice(1));
    expect(JSON.parse(frames[0]?.data ?? '{}').message.model).toBe(MODEL);
    expect(JSON.parse(frames.at(-1)?.data ?? '{}')).toHaveProperty('amazon-bedrock-invocationMetrics');
    expect(bedrock.calls.at(-1)?.body.messages).toEqual(messages);

    const log = await logOf(raw.headers.get('x-request-id') ?? '');
    expect(log.provider).toBe('bedrock');
    expect(log.prompt_tokens).toBeGreaterThan(0);
    expect(log.completion_tokens).toBeGreaterThan(0);
    expect(log.cost_usd).toBeGreaterThan(0);
  });

  it('redacted thinking goes back to Claude as it came', async () => {
    const ask: Anthropic.MessageParam[] = [{ role: 'user', content: `${REDACTED_THINKING_TRIGGER} please use the tool for Oslo` }];
    const first = await client.messages.create({ model: MODEL, max_tokens: 2000, thinking, tools: [weather], messages: ask });
    expect(first.content[0]?.type).toBe('redacted_thinking');
    const messages = nextTurn(ask, first);
    const second = await client.messages.create({ model: MODEL, max_tokens: 2000, thinking, tools: [weather], messages });
    expect(second.stop_reason).toBe('end_turn');
    expect(bedrock.calls.at(-1)?.body.messages[1].content[0]).toEqual(first.content[0]);
  });

  it("moves the client's anthropic-beta header into the body's anthropic_beta, as Bedrock takes it", async () => {
    await client.messages.create(
      { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'betas please' }] },
      { headers: { 'anthropic-beta': 'context-1m-2025-08-07, interleaved-thinking-2025-05-14' } },
    );
    const call = bedrock.calls.at(-1);
    expect(call?.body.anthropic_beta).toEqual(['context-1m-2025-08-07', 'interleaved-thinking-2025-05-14']);
    expect(call?.headers['anthropic-beta']).toBeUndefined();
    expect(bedrock.anthropic.calls.at(-1)?.headers['anthropic-beta']).toBe('context-1m-2025-08-07,interleaved-thinking-2025-05-14');
  });

  it("leaves out the beta flags Bedrock does not serve (Claude Code's first-party ones), which would fail every turn", async () => {
    // What Claude Code sends on a turn: Bedrock answers "invalid beta flag" to all but the interleaved thinking one,
    // and serves Anthropic's advanced-tool-use under the name tool-search-tool.
    const betas = 'claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14,files-api-2025-04-14,mcp-servers-2025-12-04,advanced-tool-use-2025-11-20';
    const message = await client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'betas of a coding agent' }] }, { headers: { 'anthropic-beta': betas } });
    expect(message.content).toEqual([{ type: 'text', text: 'echo: betas of a coding agent' }]);
    expect(bedrock.calls.at(-1)?.body.anthropic_beta).toEqual(['interleaved-thinking-2025-05-14', 'tool-search-tool-2025-10-19']);

    // Only flags Bedrock does not serve: no anthropic_beta at all.
    await client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'no betas left' }] }, { headers: { 'anthropic-beta': 'claude-code-20250219' } });
    expect(bedrock.calls.at(-1)?.body).not.toHaveProperty('anthropic_beta');

    // A client that writes anthropic_beta in its body for Bedrock gets it as written (and Bedrock's verdict).
    const refused = await client.messages
      .create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'own betas' }], anthropic_beta: ['claude-code-20250219'] } as Anthropic.MessageCreateParamsNonStreaming)
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect(String((refused as Error).message)).toContain('invalid beta flag');
  });

  it("Claude Code's scoped cache breakpoints reach Claude without their scope, as Bedrock does not serve the beta that allows it", async () => {
    // Claude Code marks its system prompt and tools cacheable across sessions (cache_control.scope, with the
    // prompt-caching-scope beta). Bedrock refuses the beta, and Claude refuses the scope without it: every turn failed.
    const scoped = { type: 'ephemeral', scope: 'global' } as unknown as Anthropic.CacheControlEphemeral;
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'You are a coding agent.', cache_control: scoped }];
    const tools: Anthropic.Tool[] = [{ ...weather, cache_control: scoped }];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: [{ type: 'text', text: 'cache the prefix', cache_control: { type: 'ephemeral' } }] }];
    const betas = 'claude-code-20250219,prompt-caching-scope-2026-01-05,interleaved-thinking-2025-05-14';
    const request = { model: MODEL, max_tokens: 100, system, tools, messages };
    const whole = await client.messages.create(request, { headers: { 'anthropic-beta': betas } });
    expect(whole.content).toEqual([{ type: 'text', text: 'echo: cache the prefix' }]);
    const call = bedrock.calls.at(-1);
    expect(call?.body.system).toEqual([{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }]);
    expect(call?.body.tools).toEqual([{ ...weather, cache_control: { type: 'ephemeral' } }]);
    expect(call?.body.messages).toEqual(messages);
    expect(call?.body.anthropic_beta).toEqual(['interleaved-thinking-2025-05-14']);

    const streamed = await client.messages.stream({ ...request, messages: [{ role: 'user', content: 'streamed too' }] }, { headers: { 'anthropic-beta': betas } }).finalMessage();
    expect(streamed.content).toEqual([{ type: 'text', text: 'echo: streamed too' }]);
  });

  it('a base model id and an ARN naming Claude are passed through too', async () => {
    const arn = 'arn:aws:bedrock:eu-west-1::foundation-model/anthropic.claude-3-5-sonnet-20241022-v2:0';
    for (const id of ['anthropic.claude-3-5-sonnet-20241022-v2:0', arn]) {
      const message = await client.messages.create({ model: `bedrock/${id}`, max_tokens: 100, messages: [{ role: 'user', content: 'which path' }] });
      expect(message.content).toEqual([{ type: 'text', text: 'echo: which path' }]);
      expect(bedrock.calls.at(-1)?.action).toBe('invoke');
      expect(bedrock.calls.at(-1)?.modelId).toBe(id);
    }
  });

  it('Claude behind an application inference profile the operator declares (claude_models) is passed through too', async () => {
    // The profile's ARN does not name its model (AWS tags it for cost allocation); Bedrock calls the Claude behind it.
    const profile = 'arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/a1b2c3d4e5f6';
    const behind = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET, profiles: { [profile]: MODEL_ID } });
    const gateway = await startGateway({
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      providers: { bedrock: { base_url: behind.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1', claude_models: [profile] } },
    });
    try {
      const claudeCode = new Anthropic({ baseURL: `${gateway.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
      const ask: Anthropic.MessageParam[] = [{ role: 'user', content: [{ type: 'text', text: 'please use the tool for Quito', cache_control: { type: 'ephemeral' } }] }];
      const first = await claudeCode.messages.create({ model: `bedrock/${profile}`, max_tokens: 2000, thinking, tools: [weather], messages: ask });
      expect(behind.calls.at(-1)?.action).toBe('invoke');
      expect(behind.calls.at(-1)?.modelId).toBe(profile);
      // The client's body as it wrote it: thinking, and the cache breakpoint that makes a long session affordable.
      expect(behind.calls.at(-1)?.body).toEqual({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 2000, thinking, tools: [weather], messages: ask });
      expect(first.content[0]).toEqual({ type: 'thinking', thinking: 'thinking about: please use the tool for Quito', signature: thinkingSignature('thinking about: please use the tool for Quito') });
      const second = await claudeCode.messages.stream({ model: `bedrock/${profile}`, max_tokens: 2000, thinking, tools: [weather], messages: nextTurn(ask, first) }).finalMessage();
      expect(second.stop_reason).toBe('end_turn');
      expect(behind.calls.at(-1)?.action).toBe('invoke-with-response-stream');

      // An OpenAI client of the profile still goes through Converse, with Claude's reasoning settings.
      await gateway.client.chat.completions.create({ model: `bedrock/${profile}`, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3000, reasoning_effort: 'low' });
      expect(behind.calls.at(-1)?.action).toBe('converse');
      expect(behind.calls.at(-1)?.body.additionalModelRequestFields?.thinking).toMatchObject({ type: 'enabled' });
    } finally {
      await gateway.stop();
      await behind.close();
    }
  });

  it('a cached answer replays the signatures, streamed after a whole one', async () => {
    const body = { model: MODEL, max_tokens: 2000, thinking, messages: [{ role: 'user' as const, content: 'ponder the cache' }] };
    const first = await client.messages.create(body);
    let replay: Anthropic.Message | null = null;
    for (let i = 0; i < 50 && replay === null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const calls = bedrock.calls.length;
      const streamed = await client.messages.stream(body).finalMessage();
      if (bedrock.calls.length === calls) replay = streamed;
    }
    expect(replay?.content).toEqual(first.content);
    expect(replay?.content[0]).toMatchObject({ type: 'thinking', signature: thinkingSignature('thinking about: ponder the cache') });
  });

  it('an output guardrail redacts the answer, whole and streamed', async () => {
    const guarded = await startGateway({
      providers: { bedrock: { base_url: bedrock.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' } },
      guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' }] },
    });
    try {
      const guardedClient = new Anthropic({ baseURL: `${guarded.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
      const params = { model: MODEL, max_tokens: 200, messages: [{ role: 'user' as const, content: 'mail jane@example.com please' }] };
      const whole = await guardedClient.messages.create(params);
      expect(bedrock.calls.at(-1)?.action).toBe('invoke');
      expect(JSON.stringify(bedrock.anthropic.sent.at(-1)?.message)).toContain('jane@example.com');
      expect(whole.content).toEqual([{ type: 'text', text: 'echo: mail [REDACTED:email] please' }]);
      const streamed = await guardedClient.messages.stream({ ...params, messages: [{ role: 'user', content: 'write to joe@example.com' }] }).finalMessage();
      expect(bedrock.calls.at(-1)?.action).toBe('invoke-with-response-stream');
      expect(streamed.content).toEqual([{ type: 'text', text: 'echo: write to [REDACTED:email]' }]);
    } finally {
      await guarded.stop();
    }
  });

  it('count_tokens takes what the messages call passes through (a server tool), estimating it', async () => {
    const body = { model: MODEL, tools: [{ type: 'web_search_20250305', name: 'web_search' }], messages: [{ role: 'user', content: 'search the web for tollgate' }] };
    const sent = await client.messages.create({ ...body, max_tokens: 100 } as Anthropic.MessageCreateParamsNonStreaming).catch((err: unknown) => err);
    // Bedrock judges the server tool itself (the scripted Claude behind runs it).
    expect((sent as Anthropic.Message).content.map((block) => block.type)).toContain('web_search_tool_result');
    const counted = await client.messages.countTokens(body as Anthropic.MessageCountTokensParams);
    expect(counted.input_tokens).toBeGreaterThan(0);
  });

  it('an OpenAI client of the same model still goes through Converse', async () => {
    const completion = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    expect(bedrock.calls.at(-1)?.action).toBe('converse');
  });
});

describe("Claude on Bedrock's errors for an Anthropic client", () => {
  it("a ValidationException with Claude's message is a 400 invalid_request_error", async () => {
    const error = await client.messages
      .create({ model: MODEL, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 3000 }, messages: [{ role: 'user', content: 'x' }] })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: '`max_tokens` must be greater than `thinking.budget_tokens`' } });
    expect(bedrock.calls.at(-1)?.action).toBe('invoke');
  });

  it('a ThrottlingException is a 429 rate_limit_error with its retry-after, whole and streamed', async () => {
    bedrock.enqueue({ kind: 'error', status: 429, errorType: 'ThrottlingException', message: 'Too many requests, please wait before trying again.', headers: { 'retry-after': '2' } });
    const whole = await client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err);
    expect(whole).toBeInstanceOf(Anthropic.RateLimitError);
    expect((whole as InstanceType<typeof Anthropic.RateLimitError>).headers?.get('retry-after')).toBe('2');
    expect((whole as InstanceType<typeof Anthropic.RateLimitError>).error).toMatchObject({ error: { type: 'rate_limit_error', message: 'Too many requests, please wait before trying again.' } });

    bedrock.enqueue({ kind: 'stream-exception', exceptionType: 'throttlingException', message: 'Too many tokens, please wait before trying again.', afterEvents: 0 });
    const streamed = await client.messages.stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }).finalMessage().catch((err: unknown) => err);
    expect(streamed).toBeInstanceOf(Anthropic.RateLimitError);
    expect((streamed as InstanceType<typeof Anthropic.RateLimitError>).error).toMatchObject({ error: { type: 'rate_limit_error', message: 'Too many tokens, please wait before trying again.' } });
  });

  it("a ModelErrorException (Bedrock's 424) is the upstream's failure: a 502 api_error, and a fallback takes the request", async () => {
    bedrock.enqueue({ kind: 'error', status: 424, errorType: 'ModelErrorException', message: 'The model failed to process the request.' });
    const error = await client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(Anthropic.InternalServerError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(502);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { type: 'api_error', message: 'The model failed to process the request.' } });

    // With room for another attempt, the request moves on to its fallback (Anthropic's API here) instead of failing.
    const withFallback = await startGateway({
      settings: { routing: { retry: { max_attempts: 2 }, breaker: { enabled: false } } },
      providers: {
        bedrock: { base_url: bedrock.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' },
        claude: { type: 'anthropic', base_url: `${bedrock.anthropic.url}/v1`, api_key: 'anthropic-behind-bedrock' },
      },
    });
    try {
      bedrock.reset();
      bedrock.setMode({ kind: 'error', status: 424, errorType: 'ModelErrorException', message: 'The model failed to process the request.' });
      const fallbackClient = new Anthropic({ baseURL: `${withFallback.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
      const params = { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'fall back' }], fallbacks: ['claude/claude-sonnet-4-5'] };
      const { data, response } = await fallbackClient.messages.create(params as Anthropic.MessageCreateParamsNonStreaming).withResponse();
      expect(data.content).toEqual([{ type: 'text', text: 'echo: fall back' }]);
      expect(response.headers.get('x-tollgate-fallback')).toBe('true');
      expect(bedrock.calls).toHaveLength(1);
    } finally {
      bedrock.setMode({ kind: 'ok' });
      await withFallback.stop();
    }
  });

  it("a ServiceQuotaExceededException (Bedrock's 400 for a spent quota) is a 429 rate_limit_error, and a fallback takes the request", async () => {
    // Bedrock answers an account's spent daily token quota with a 400 (AWS API reference, InvokeModel: "You can
    // resubmit your request later"): not the client's mistake, and another target or account can answer meanwhile.
    const spent = { kind: 'error', status: 400, errorType: 'ServiceQuotaExceededException', message: 'Too many tokens per day, please wait before trying again.' } as const;
    bedrock.enqueue(spent);
    const error = await client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { type: 'rate_limit_error', message: 'Too many tokens per day, please wait before trying again.' } });

    const withFallback = await startGateway({
      settings: { routing: { retry: { max_attempts: 2 }, breaker: { enabled: false } } },
      providers: {
        bedrock: { base_url: bedrock.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' },
        claude: { type: 'anthropic', base_url: `${bedrock.anthropic.url}/v1`, api_key: 'anthropic-behind-bedrock' },
      },
    });
    try {
      bedrock.reset();
      bedrock.setMode(spent);
      const fallbackClient = new Anthropic({ baseURL: `${withFallback.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
      const params = { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'fall back' }], fallbacks: ['claude/claude-sonnet-4-5'] };
      const { data, response } = await fallbackClient.messages.create(params as Anthropic.MessageCreateParamsNonStreaming).withResponse();
      expect(data.content).toEqual([{ type: 'text', text: 'echo: fall back' }]);
      expect(response.headers.get('x-tollgate-fallback')).toBe('true');
      expect(bedrock.calls).toHaveLength(1);
    } finally {
      bedrock.setMode({ kind: 'ok' });
      await withFallback.stop();
    }
  });

  it("a ModelTimeoutException (Bedrock's 408), whole or inside the stream, is the gateway's 504 timeout_error", async () => {
    bedrock.enqueue({ kind: 'error', status: 408, errorType: 'ModelTimeoutException', message: 'Model has timed out in processing the request.' });
    const whole = await client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err);
    expect((whole as InstanceType<typeof Anthropic.APIError>).status).toBe(504);
    expect((whole as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { type: 'timeout_error', message: 'Model has timed out in processing the request.' } });
    bedrock.enqueue({ kind: 'stream-exception', exceptionType: 'modelTimeoutException', message: 'Model has timed out in processing the request.', afterEvents: 0 });
    const streamed = await client.messages.stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }).finalMessage().catch((err: unknown) => err);
    expect((streamed as InstanceType<typeof Anthropic.APIError>).status).toBe(504);
    expect((streamed as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { type: 'timeout_error' } });
  });

  it('an exception inside the open stream ends it with an Anthropic error event, never a message_stop', async () => {
    bedrock.enqueue({ kind: 'stream-exception', exceptionType: 'modelStreamErrorException', message: 'The model stream broke.', afterEvents: 3 });
    const raw = await rawStream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'break it' }] });
    expect(raw.status).toBe(200);
    const frames = framesOf(await raw.text());
    expect(frames.slice(0, 3).map((frame) => frame.event)).toEqual(bedrock.invokeEvents.slice(0, 3).map((json) => JSON.parse(json).type));
    expect(frames.at(-1)?.event).toBe('error');
    expect(JSON.parse(frames.at(-1)?.data ?? '{}')).toMatchObject({ type: 'error', error: { message: 'The model stream broke.' } });
    expect(frames.map((frame) => frame.event)).not.toContain('message_stop');
  });

  it("a signature Bedrock refuses is a 401 whose message quotes none of the signed headers (the session token, the operator's headers)", async () => {
    // A wrong or rotated secret: Bedrock's InvalidSignatureException quotes the canonical request it computed, every
    // signed header with its value, x-amz-security-token's included.
    const session = 'IQoJb3JpZ2luX2VjEJr-session-token-of-a-role';
    const signed = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET, sessionToken: session });
    const gateway = await startGateway({
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      providers: { bedrock: { base_url: signed.url, api_key: `${ACCESS_KEY}:rotated-secret-key:${session}`, region: 'eu-west-1', headers: { 'x-proxy-token': 'operator-proxy-secret' } } },
    });
    try {
      const wrong = new Anthropic({ baseURL: `${gateway.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
      const error = await wrong.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
      const rendered = JSON.stringify((error as InstanceType<typeof Anthropic.APIError>).error);
      expect(rendered).toContain('The request signature we calculated does not match the signature you provided.');
      expect(rendered).not.toContain(session);
      expect(rendered).not.toContain('operator-proxy-secret');
      const log = JSON.stringify(await logOfIn(gateway, (error as InstanceType<typeof Anthropic.APIError>).requestID ?? ''));
      expect(log).toContain('InvalidSignatureException');
      expect(log).not.toContain(session);
      expect(log).not.toContain('operator-proxy-secret');
    } finally {
      await gateway.stop();
      await signed.close();
    }
  });

  it('the scripted Bedrock refuses a body with model or stream, or without anthropic_version, as Bedrock does', async () => {
    const post = async (body: Record<string, unknown>): Promise<string> => {
      const response = await fetch(`${bedrock.url}/model/${encodeURIComponent(MODEL_ID)}/invoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(400);
      expect(response.headers.get('x-amzn-errortype')).toMatch(/^ValidationException:/);
      return ((await response.json()) as { message: string }).message;
    };
    const messages = [{ role: 'user', content: 'hi' }];
    expect(await post({ anthropic_version: 'bedrock-2023-05-31', model: MODEL_ID, max_tokens: 10, messages })).toContain('extraneous key [model] is not permitted');
    expect(await post({ anthropic_version: 'bedrock-2023-05-31', stream: true, max_tokens: 10, messages })).toContain('extraneous key [stream] is not permitted');
    expect(await post({ max_tokens: 10, messages })).toContain('required key [anthropic_version] not found');
  });
});
