import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Groq's flex tier (`service_tier: "flex"`): "If flex capacity is unavailable, requests will fail quickly with status
 * 498 and error capacity_exceeded. Add jittered backoff and retries to smooth spikes" (console.groq.com/docs/
 * flex-processing; docs/errors: "498 Custom Status Code - Flex Tier Capacity Exceeded ... You can try again later").
 * tollgate took Groq's own status for a client error no other attempt could mend: the request failed at once, the
 * route's fallback untried. It is now retried as a 503 is, and a route moves on to its fallback; Groq's status and
 * body stay as they were for the client when nothing else answers.
 */

const CAPACITY = JSON.stringify({ error: { message: 'Flex tier capacity exceeded. Please try again later.', type: 'capacity_exceeded', code: 'capacity_exceeded' } });
const JSON_TYPE = { 'content-type': 'application/json' };

let groq: ScriptedUpstream;
let backup: ScriptedUpstream;
let tg: RunningGateway;
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  [groq, backup] = await Promise.all([startOpenAIUpstream({ apiKey: 'gsk-flex' }), startOpenAIUpstream({ apiKey: 'sk-backup' })]);
  tg = await startGateway({
    providers: {
      groq: { base_url: `${groq.url}/v1`, api_key: 'gsk-flex' },
      backup: { type: 'openai', base_url: `${backup.url}/v1`, api_key: 'sk-backup' },
    },
    settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 1, max_delay_ms: 5 }, breaker: { enabled: false } } },
    routes: { flex: { targets: [{ model: 'groq/llama-3.3-70b-versatile' }], fallbacks: ['backup/gpt-4o-mini'] } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await Promise.all([groq?.close(), backup?.close()]);
});
beforeEach(() => {
  groq.reset();
  backup.reset();
});

describe("Groq's 498 (flex tier at capacity)", () => {
  it('moves a route on to its fallback', async () => {
    groq.setMode({ kind: 'raw', status: 498, headers: JSON_TYPE, body: CAPACITY });
    const answer = await tg.client.chat.completions.create({ model: 'flex', messages, service_tier: 'flex' } as OpenAI.ChatCompletionCreateParamsNonStreaming).withResponse();
    expect(answer.data.choices[0]?.message.content).toBe('echo: hi');
    expect(answer.response.headers.get('x-tollgate-provider')).toBe('backup');
    expect(groq.calls[0]?.body.service_tier).toBe('flex');
    expect(backup.calls).toHaveLength(1);
  });

  it('is tried again on Groq after a back-off, and the answer that follows is the client\'s', async () => {
    groq.enqueue({ kind: 'raw', status: 498, headers: JSON_TYPE, body: CAPACITY });
    const answer = await tg.client.chat.completions.create({ model: 'groq/llama-3.3-70b-versatile', messages, service_tier: 'flex' } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(answer.choices[0]?.message.content).toBe('echo: hi');
    expect(groq.calls).toHaveLength(2);
  });

  it('reaches the client with Groq\'s status and body when no attempt answers', async () => {
    groq.setMode({ kind: 'raw', status: 498, headers: JSON_TYPE, body: CAPACITY });
    const failure = await tg.client.chat.completions.create({ model: 'groq/llama-3.3-70b-versatile', messages }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    const error = failure as InstanceType<typeof OpenAI.APIError>;
    expect(error.status).toBe(498);
    expect(error.error).toMatchObject({ message: 'Flex tier capacity exceeded. Please try again later.', code: 'capacity_exceeded' });
    expect(groq.calls).toHaveLength(2);
  });
});
