import { describe, expect, it } from 'vitest';
import { cacheKeysOf, uncacheableReason } from '../../src/cache/request-key.js';
import { replayChunks, StreamAssembler } from '../../src/cache/answer-codec.js';
import type { ChatCompletion, ChatCompletionChunk } from '../../src/core/canonical.js';
import type { CachePolicy } from '../../src/core/config.js';

const base = { model: 'openai/gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is 2 + 2?' }] };
const policy: CachePolicy = { mode: 'on', ttlSeconds: 60, scope: 'team', cacheSampled: false, semantic: true, threshold: 0.75 };

describe('cache keys', () => {
  it('ignore field order and delivery fields, and nothing else', () => {
    const keys = cacheKeysOf(base, 'team:a');
    expect(cacheKeysOf({ messages: base.messages, model: base.model, stream: true, user: 'u', metadata: { a: '1' } }, 'team:a').exact).toBe(keys.exact);
    expect(cacheKeysOf({ ...base, temperature: 0 }, 'team:a').exact).not.toBe(keys.exact);
    expect(cacheKeysOf({ ...base, some_new_field: 1 }, 'team:a').exact).not.toBe(keys.exact);
    expect(cacheKeysOf(base, 'team:b').exact).not.toBe(keys.exact);
  });

  it("take in a native body's own fields (what its canonical form leaves out), but not its delivery fields", () => {
    const body = { model: 'claude-x', max_tokens: 100, messages: [{ role: 'user', content: 'What is 2 + 2?' }] };
    const plain = cacheKeysOf(base, 'team:a', true, body);
    // The same canonical request with a server tool only the native body carries asks something else.
    const withTool = cacheKeysOf(base, 'team:a', true, { ...body, tools: [{ type: 'web_search_20250305', name: 'web_search' }] });
    expect(withTool.exact).not.toBe(plain.exact);
    expect(withTool.semanticScope).not.toBe(plain.semanticScope);
    expect(cacheKeysOf(base, 'team:a', true, { ...body, top_k: 5 }).exact).not.toBe(plain.exact);
    // The API version the body goes to (Gemini's v1beta, v1) is part of what it asks, in both tiers.
    const v1 = cacheKeysOf(base, 'team:a', true, body, 'v1');
    expect(v1.exact).not.toBe(cacheKeysOf(base, 'team:a', true, body, 'v1beta').exact);
    expect(v1.semanticScope).not.toBe(cacheKeysOf(base, 'team:a', true, body, 'v1beta').semanticScope);
    // Streaming and metadata are delivery, as in the canonical request.
    expect(cacheKeysOf(base, 'team:a', true, { ...body, stream: true, metadata: { user_id: 'u' } }).exact).toBe(plain.exact);
    // The native conversation is the canonical one: another question keeps the semantic scope.
    const other = { ...base, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'And 3 + 3?' }] };
    expect(cacheKeysOf(other, 'team:a', true, { ...body, messages: [{ role: 'user', content: 'And 3 + 3?' }] }).semanticScope).toBe(plain.semanticScope);
  });

  it('give paraphrases of the last question the same semantic scope, and nothing else', () => {
    const keys = cacheKeysOf(base, 'team:a');
    const reworded = cacheKeysOf({ ...base, messages: [base.messages[0]!, { role: 'user', content: 'Tell me 2 plus 2' }] }, 'team:a');
    expect(reworded.semanticScope).toBe(keys.semanticScope);
    expect(reworded.exact).not.toBe(keys.exact);
    expect(reworded.question).toBe('Tell me 2 plus 2');
    const otherSystem = cacheKeysOf({ ...base, messages: [{ role: 'system', content: 'Be verbose.' }, base.messages[1]!] }, 'team:a');
    expect(otherSystem.semanticScope).not.toBe(keys.semanticScope);
    const tools = cacheKeysOf({ ...base, tools: [{ type: 'function', function: { name: 'f' } }] }, 'team:a');
    expect(tools.semanticScope).not.toBe(keys.semanticScope);
  });

  it('make only the exact key and the question when the semantic tier is off', () => {
    const keys = cacheKeysOf(base, 'team:a');
    const exactOnly = cacheKeysOf(base, 'team:a', false);
    expect(exactOnly).toEqual({ exact: keys.exact, semanticScope: '', conversation: null, question: 'What is 2 + 2?' });
  });

  it('embed a follow-up with the turns before it, and leave images to the exact tier', () => {
    const followUp = cacheKeysOf(
      { model: 'm', messages: [{ role: 'user', content: 'Capital of France?' }, { role: 'assistant', content: 'Paris.' }, { role: 'user', content: 'And its population?' }] },
      'global',
    );
    expect(followUp.conversation).toBe('user: Capital of France?\nassistant: Paris.\nuser: And its population?');
    const image = cacheKeysOf({ model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:,' } }] }] }, 'global');
    expect(image.conversation).toBeNull();
  });

  it('skip requests asking for several or varied answers', () => {
    expect(uncacheableReason({ ...base, n: 2 }, policy)).toMatch(/n > 1/);
    expect(uncacheableReason({ ...base, temperature: 0.7 }, policy)).toMatch(/temperature/);
    expect(uncacheableReason({ ...base, temperature: 0.7 }, { ...policy, cacheSampled: true })).toBeNull();
    expect(uncacheableReason(base, policy)).toBeNull();
  });
});

describe('cached answers as streams', () => {
  const completion: ChatCompletion = {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'x'.repeat(150), refusal: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, logprobs: null, finish_reason: 'tool_calls' }],
    usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
  };

  it('replay as OpenAI streams them and assemble back to the same answer', () => {
    const chunks = [...replayChunks(completion, true)];
    expect(chunks.every((chunk) => 'usage' in chunk)).toBe(true);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: completion.usage });
    expect([...replayChunks(completion, false)].some((chunk) => 'usage' in chunk)).toBe(false);
    const assembler = new StreamAssembler();
    for (const chunk of chunks) assembler.add(chunk);
    const back = assembler.completion();
    expect(back?.choices).toEqual([{ index: 0, message: { role: 'assistant', content: 'x'.repeat(150), refusal: null, tool_calls: completion.choices[0] && (completion.choices[0] as { message: { tool_calls: unknown } }).message.tool_calls }, logprobs: null, finish_reason: 'tool_calls' }]);
    expect(back?.usage).toEqual(completion.usage);
  });

  it('assemble a tool call whose name the provider repeats in every delta under that name once', () => {
    const assembler = new StreamAssembler();
    const piece = (args: string, finish: string | null = null): ChatCompletionChunk => ({
      id: 'c',
      object: 'chat.completion.chunk',
      model: 'm',
      choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: args } }] }, finish_reason: finish }],
    });
    assembler.add(piece('{"q":'));
    assembler.add(piece('"x"}', 'tool_calls'));
    expect(assembler.completion()?.choices[0]).toMatchObject({ message: { tool_calls: [{ id: 'call_1', function: { name: 'lookup', arguments: '{"q":"x"}' } }] } });
  });

  it('assemble reasoning sent under both names (vLLM) once', () => {
    const assembler = new StreamAssembler();
    const piece = (text: string, finish: string | null = null): ChatCompletionChunk => ({
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta: { reasoning_content: text, reasoning: text }, finish_reason: finish }],
    });
    assembler.add(piece('Six times seven '));
    assembler.add(piece('is 42.', 'stop'));
    expect(assembler.completion()?.choices[0]).toMatchObject({ message: { reasoning_content: 'Six times seven is 42.' } });
  });

  it('assemble nothing from a stream that did not finish', () => {
    const assembler = new StreamAssembler();
    assembler.add({ id: 'c', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content: 'half' }, finish_reason: null }] });
    expect(assembler.completion()).toBeNull();
  });
});
