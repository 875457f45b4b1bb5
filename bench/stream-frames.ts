// What writing one streamed answer costs the OpenAI dialect, per stream of 20 chunks: re-serialising each parsed
// chunk (`data: ${JSON.stringify(chunk)}`, what it did before) against writing the upstream's own event text with
// the model name changed (openAINativeFramer, what it does now). The chunks are the scripted upstream's, as
// OpenAI writes them. Figures, not a pass/fail test.
//
//   npx tsx bench/stream-frames.ts [--streams 20000] [--rounds 5]
import { parseArgs } from 'node:util';
import { openAINativeFramer } from '../src/dialects/openai/native.js';
import { planCompletion, streamFrames } from '../test/upstream/openai-responses.js';
import { parseChatRequest } from '../test/upstream/openai-request.js';

const { values } = parseArgs({ options: { streams: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '5' } } });
const STREAMS = Number(values.streams);
const ROUNDS = Number(values.rounds);

const parsed = parseChatRequest({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] });
if (!parsed.ok) throw new Error('the scripted request did not parse');
const pieces = Array.from({ length: 20 }, (_, i) => `word${i} `);
const events = streamFrames(planCompletion(parsed.request, pieces))
  .map((frame) => frame.slice('data: '.length).trimEnd())
  .filter((data) => data !== '[DONE]');
const chunks = events.map((data) => ({ ...(JSON.parse(data) as Record<string, unknown>), model: 'openai/gpt-4o-mini' }));
const natives = events.map((text) => ({ format: 'openai', text }));

let sink = 0;
function serialised(): void {
  for (const chunk of chunks) sink += `data: ${JSON.stringify(chunk)}\n\n`.length;
}
function framed(): void {
  const frame = openAINativeFramer('openai/gpt-4o-mini');
  for (const native of natives) sink += (frame(native) as string).length;
}

function time(work: () => void): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < STREAMS; i++) work();
  return Number(process.hrtime.bigint() - started) / 1000 / STREAMS;
}

console.log(`${events.length} events a stream, ${STREAMS} streams a round, ${ROUNDS} rounds taking turns (µs per stream)`);
for (let round = 0; round < ROUNDS; round++) {
  console.log(`round ${round + 1}: serialised ${time(serialised).toFixed(2)}  framed ${time(framed).toFixed(2)}`);
}
if (sink === 0) console.log('');
