// What writing one streamed answer costs the /genai route for a Gemini upstream, per stream of 20 events: rendering
// each decoded canonical chunk back into a Gemini event (GeminiStreamRenderer and `data: ${JSON.stringify(event)}`,
// what the route did before native pass-through) against writing the upstream's own event text with modelVersion
// changed (nativeEventsText, what it does now). The events are shaped as Gemini writes them (text pieces,
// usageMetadata, modelVersion, responseId); both sides start from the chunks the Gemini decoder made of them, which
// it still makes for the stages. Figures, not a pass/fail test.
//
//   npx tsx bench/genai-stream-frames.ts [--streams 20000] [--rounds 5]
import { parseArgs } from 'node:util';
import type { ChatCompletionChunk, NativeStreamEvent } from '../src/core/canonical.js';
import { nativeEventsText } from '../src/dialects/gemini/native.js';
import { GeminiStreamRenderer, sseFrame } from '../src/dialects/gemini/stream.js';
import { createGeminiStreamDecoder } from '../src/providers/gemini/stream.js';

const { values } = parseArgs({ options: { streams: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '5' } } });
const STREAMS = Number(values.streams);
const ROUNDS = Number(values.rounds);

const usage = { promptTokenCount: 8, totalTokenCount: 8, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 8 }] };
const events = Array.from({ length: 20 }, (_, i) => {
  const last = i === 19;
  return JSON.stringify({
    candidates: [{ content: { parts: [{ text: `word${i} ` }], role: 'model' }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }],
    usageMetadata: last ? { ...usage, candidatesTokenCount: 20, totalTokenCount: 28 } : usage,
    modelVersion: 'gemini-2.5-flash-001',
    responseId: 'mD3ZaPXiHsGgz7IPlqWd0Q0',
  });
});
const decoder = createGeminiStreamDecoder('gemini-2.5-flash-001', 'gemini', true, { keepEvents: true });
const chunks: ChatCompletionChunk[] = [...decoder.push(Buffer.from(events.map((data) => `data: ${data}\r\n\r\n`).join(''))), ...decoder.end().chunks];
const natives: NativeStreamEvent[] = decoder.takeNative?.() ?? [];
if (natives.length !== events.length) throw new Error('the decoder did not keep every event');
const reply = { model: 'gemini-2.5-flash', includeThoughts: false };

let sink = 0;
function rendered(): void {
  const renderer = new GeminiStreamRenderer(reply);
  for (const chunk of chunks) for (const event of renderer.push(chunk)) sink += sseFrame(event).length;
  for (const event of renderer.end()) sink += sseFrame(event).length;
}
function passedThrough(): void {
  sink += nativeEventsText(natives, reply, 'sse', true).length;
}

function time(work: () => void): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < STREAMS; i++) work();
  return Number(process.hrtime.bigint() - started) / 1000 / STREAMS;
}

console.log(`${events.length} events (${chunks.length} canonical chunks) a stream, ${STREAMS} streams a round, ${ROUNDS} rounds taking turns (µs per stream)`);
for (let round = 0; round < ROUNDS; round++) {
  console.log(`round ${round + 1}: rendered ${time(rendered).toFixed(2)}  passed through ${time(passedThrough).toFixed(2)}`);
}
if (sink === 0) console.log('');
