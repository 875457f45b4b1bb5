// With the cache on, every streamed answer is put together as it passes (to be stored whole). Each chunk's log
// probabilities and annotations were added by copying everything kept so far: a 40 000-token answer streamed with
// logprobs took tens of seconds of CPU more, held the event loop for seconds at a time (every other request waiting), and
// reached the client many times slower than with the cache off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const TOKENS = 40_000;
/** Far above the answer's time when put together in linear time (3-5 s here, the scripted upstream and the client included), far below the copying's (25 s and more). */
const PROMPT_MS = 12_000;

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up', record: false });
  tg = await startGateway({ cache: { mode: 'on', semantic: { enabled: false } }, providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up' } } });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

describe('a long streamed answer with log probabilities, cache on', () => {
  it('reaches the official client promptly with every token’s logprob, and is served from the cache after', async () => {
    // The scripted upstream echoes the question a token at a time, each chunk with its logprob.
    const question = 'word '.repeat(TOKENS);
    const ask = () => tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', stream: true, logprobs: true, max_completion_tokens: 2 * TOKENS, messages: [{ role: 'user', content: question }] });
    const started = performance.now();
    let logprobs = 0;
    for await (const chunk of await ask()) logprobs += chunk.choices[0]?.logprobs?.content?.length ?? 0;
    const ms = performance.now() - started;
    expect(logprobs).toBeGreaterThan(TOKENS);
    expect(ms).toBeLessThan(PROMPT_MS);

    let replayed = 0;
    const again = await ask().withResponse();
    expect(again.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    for await (const chunk of again.data) replayed += chunk.choices[0]?.logprobs?.content?.length ?? 0;
    expect(replayed).toBe(logprobs);
  }, 120_000);
});
