// Mistral's reasoning models (Magistral) answer with `content` as a list of chunks, not a string: a ThinkChunk
// (`{"type":"thinking","thinking":[TextChunk...]}`) and then TextChunks (`{"type":"text","text":...}`), in a whole
// answer's message and in each streamed delta alike (mistralai SDK: AssistantMessage.content, DeltaMessage.content,
// ThinkChunk, TextChunk). Used by the scripted OpenAI upstream started with `vendor: 'mistral'` when a `reply`
// mode gives thinking.
import type { Completion } from './openai-responses.js';

const think = (text: string) => ({ type: 'thinking', thinking: [{ type: 'text', text }] });
const text = (value: string) => ({ type: 'text', text: value });

function counts(completion: Completion) {
  const { prompt_tokens, completion_tokens, total_tokens } = completion.usage;
  return { prompt_tokens, completion_tokens, total_tokens };
}

function replyOf(completion: Completion): string[] {
  const answer = completion.answers[0];
  return answer?.kind === 'text' ? answer.tokens : [];
}

/** The whole `chat.completion` body: the thinking as one ThinkChunk, the reply as one TextChunk. */
export function magistralJson(completion: Completion, thinking: readonly string[]): string {
  return JSON.stringify({
    id: completion.id.replace('chatcmpl-', ''),
    object: 'chat.completion',
    created: completion.created,
    model: completion.request.model,
    usage: counts(completion),
    choices: [{ index: 0, message: { role: 'assistant', tool_calls: null, content: [think(thinking.join('')), text(replyOf(completion).join(''))] }, finish_reason: 'stop' }],
  });
}

/** The SSE frames: a role delta, one ThinkChunk per thinking piece, one TextChunk per reply piece, the finish with usage. */
export function magistralFrames(completion: Completion, thinking: readonly string[]): string[] {
  const head = { id: completion.id.replace('chatcmpl-', ''), object: 'chat.completion.chunk', created: completion.created, model: completion.request.model };
  const frame = (delta: Record<string, unknown>, finish: string | null = null, usage?: object) =>
    `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
  return [
    frame({ role: 'assistant', content: '' }),
    ...thinking.map((piece) => frame({ content: [think(piece)] })),
    ...replyOf(completion).map((piece) => frame({ content: [text(piece)] })),
    frame({ content: '' }, 'stop', counts(completion)),
    'data: [DONE]\n\n',
  ];
}
