import { describe, expect, it } from 'vitest';
import { verbatimChunks } from '../../src/cache/verbatim-replay.js';
import type { CachedNative } from '../../src/cache/cache-store.js';

/** A stored stream's own events, replayed to an OpenAI client as the miss served them. */
const chunk = (content: string, model = 'gpt-4o-mini-2024-07-18'): string =>
  JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }], obfuscation: 'q1' });

function native(data: string[]): CachedNative {
  return { format: 'openai', events: data.map((text) => ({ data: text })) } as unknown as CachedNative;
}

describe('a verbatim stream replay', () => {
  it('gives each stored event back as a chunk with its own text, the model named as the client asked', () => {
    const events = [chunk('Hel'), chunk('lo')];
    const replay = verbatimChunks(native(events), 'my-model');
    const out = [...(replay ?? [])];
    const contentOf = (event: (typeof out)[number]): unknown => (event.kind === 'chunk' ? (event.chunk.choices[0] as { delta?: { content?: unknown } } | undefined)?.delta?.content : null);
    expect(out.map(contentOf)).toEqual(['Hel', 'lo']);
    expect(out.map((event) => event.kind === 'chunk' && event.chunk.model)).toEqual(['my-model', 'my-model']);
    expect(out.map((event) => event.native)).toEqual(events.map((text) => ({ format: 'openai', text })));
  });

  it('is not used when an event is not a JSON object, so the hit is served from the canonical answer', () => {
    expect(verbatimChunks(native([chunk('a'), 'not json']), 'm')).toBeNull();
  });

  it('reads the events as they are taken, and fails at one that no longer reads as a chunk', () => {
    const replay = verbatimChunks(native([chunk('a'), '{"choices": "none"}', chunk('c')]), 'm');
    expect(replay).not.toBeNull();
    const taken = (replay as Iterable<unknown>)[Symbol.iterator]();
    expect(taken.next().done).toBe(false);
    expect(() => taken.next()).toThrow(/damaged/);
  });
});
