import { resolve } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * The three example plugins as an operator runs them: named in the config by file path, loaded into a running
 * gateway, driven with the official openai SDK against the scripted OpenAI upstream (which answers
 * "echo: <last user message>", so what the client reads shows what the plugins did).
 */
const examples = resolve(import.meta.dirname, '../../plugins/examples');

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream();
  tg = await startGateway(
    openAIConfig(upstream.url, {
      plugins: [
        {
          name: 'canned-answer',
          path: `${examples}/canned-answer.ts`,
          options: { answers: [{ pattern: '^what are your opening hours\\??$', text: 'We are open 9 to 5, Monday to Friday.' }] },
        },
        {
          name: 'team-system-prompt',
          path: `${examples}/team-system-prompt.ts`,
          options: { prompts: { research: 'You help the research team.' }, default: 'You are a helpful assistant.' },
        },
        { name: 'redact-word', path: `${examples}/redact-word.ts`, options: { words: ['hunter2', 'password'] } },
      ],
    }),
  );
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

const ask = (content: string): OpenAI.ChatCompletionMessageParam[] => [{ role: 'user', content }];

async function streamed(client: OpenAI, content: string, includeUsage = false) {
  const stream = await client.chat.completions.create({
    model: 'openai/gpt-4o-mini',
    messages: ask(content),
    stream: true,
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
  });
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
  return { chunks, text };
}

describe('the example plugins loaded from the config', () => {
  it('redact-word: rewrites the answer, whole and streamed', async () => {
    const whole = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: ask('my Password is hunter2, ok') });
    expect(whole.choices[0]?.message.content).toBe('echo: my [redacted] is [redacted], ok');
    expect(whole.usage?.total_tokens).toBeGreaterThan(0);

    const { chunks, text } = await streamed(tg.client, 'my PASSWORD is hunter2 and hunter2 again', true);
    expect(text).toBe('echo: my [redacted] is [redacted] and [redacted] again');
    expect(chunks.at(-1)?.usage?.total_tokens).toBeGreaterThan(0);
    expect(chunks.filter((c) => c.choices[0]?.finish_reason === 'stop')).toHaveLength(1);
    expect(upstream.calls).toHaveLength(2);
  });

  it('team-system-prompt: the provider gets the default prompt first for a caller without a team', async () => {
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, ...ask('hi')] });
    expect(upstream.calls[0]?.body.messages).toEqual([
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ]);
  });

  it("team-system-prompt: a virtual key's team picks its prompt, streamed too", async () => {
    const team = await jsonRequest(tg.url, 'POST', '/api/teams', { name: 'research', budget: null, rate_limit: null });
    expect(team.status).toBe(201);
    const key = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'r1', budget: null, rate_limit: null, models: [], team: team.body.id });
    expect(key.status).toBe(201);
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key.body.key, maxRetries: 0 });
    const { text } = await streamed(client, 'hello');
    expect(text).toBe('echo: hello');
    expect(upstream.calls[0]?.body.messages).toEqual([
      { role: 'system', content: 'You help the research team.' },
      { role: 'user', content: 'hello' },
    ]);
  });

  it('canned-answer: answers a matching question without calling the provider, whole and streamed', async () => {
    const whole = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: ask('What are your opening hours?') });
    expect(whole.choices[0]?.message.content).toBe('We are open 9 to 5, Monday to Friday.');
    expect(whole.model).toBe('openai/gpt-4o-mini');
    expect(whole.id).toMatch(/^chatcmpl-/);
    expect(whole.usage).toMatchObject({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });

    const { chunks, text } = await streamed(tg.client, 'what are your opening hours', true);
    expect(text).toBe('We are open 9 to 5, Monday to Friday.');
    expect(chunks.at(-1)?.usage).toMatchObject({ total_tokens: 0 });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(upstream.calls).toHaveLength(0);

    // Anything else goes to the provider.
    const other = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: ask('what are your opening hours tomorrow?') });
    expect(other.choices[0]?.message.content).toBe('echo: what are your opening hours tomorrow?');
    expect(upstream.calls).toHaveLength(1);
  });
});
