import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';

/**
 * Azure OpenAI deployments answer for their models as OpenAI does: a chat model (gpt-4o, gpt-4.1) refuses
 * reasoning_effort with a 400, a reasoning model takes it. The effort tollgate derives from an Anthropic thinking
 * budget goes to a deployment named like its model only as that model takes it, so Claude Code with extended
 * thinking routed to azure/gpt-4.1 gets an answer; a /v1 client's own reasoning_effort is still sent as written.
 */

let upstream: AzureUpstream;
let tg: RunningGateway;
let anthropic: Anthropic;
const KEY = 'azure-upstream-key';

beforeAll(async () => {
  upstream = await startAzureUpstream({ apiKey: KEY, deployments: { 'gpt-4.1': 'gpt-4.1-2025-04-14', 'gpt-4o-mini': 'gpt-4o-mini-2024-07-18', 'o4-mini': 'o4-mini-2025-04-16' } });
  tg = await startGateway({
    providers: { azure: { base_url: upstream.url, api_key: KEY, api_version: '2025-04-01-preview' } },
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
  });
  anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

const thinking = { type: 'enabled', budget_tokens: 2048 } as const;

describe('an Anthropic client with extended thinking, on Azure OpenAI', () => {
  it('reaches a gpt-4.1 deployment without reasoning_effort (whole and streamed)', async () => {
    const message = await anthropic.messages.create({ model: 'azure/gpt-4.1', max_tokens: 4000, thinking, messages: [{ role: 'user', content: 'ponder this' }] });
    expect(message.stop_reason).toBe('end_turn');
    const streamed = await anthropic.messages.stream({ model: 'azure/gpt-4o-mini', max_tokens: 4000, thinking, messages: [{ role: 'user', content: 'ponder this' }] }).finalMessage();
    expect(streamed.stop_reason).toBe('end_turn');
    expect(upstream.calls.map((call) => 'reasoning_effort' in call.body)).toEqual([false, false]);
  });

  it('keeps it for a reasoning model deployment', async () => {
    await anthropic.messages.create({ model: 'azure/o4-mini', max_tokens: 4000, thinking, messages: [{ role: 'user', content: 'ponder this' }] });
    expect(upstream.calls[0]?.body.reasoning_effort).toBe('medium');
  });

  it("sends a /v1 client's own reasoning_effort as written, with Azure's answer", async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key', maxRetries: 0 });
    const error = await client.chat.completions.create({ model: 'azure/gpt-4.1', reasoning_effort: 'low', messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(upstream.calls[0]?.body.reasoning_effort).toBe('low');
  });
});
