// What the output guardrails cost an OpenAI-format stream of the suite's shape (a role chunk, 20 word pieces, the
// finish and the usage chunk), per stream, in process: the full pipeline's five rules (bench/serve-full-gateway.ts)
// applied by guardStream, and each event it emits written as the OpenAI dialect writes it (the upstream's own text
// through openAINativeFramer when the event kept `native`, else the chunk re-serialised). Beside it, the same
// stream with no rule (the events written as they came), the floor. Run it in two worktrees to compare builds.
//
//   npx tsx bench/guard-stream.ts [--streams 20000] [--rounds 5]
import { parseArgs } from 'node:util';
import { from, type Observable } from 'rxjs';
import type { ChatCompletionChunk, ResponseEvent } from '../src/core/canonical.js';
import { openAINativeFramer } from '../src/dialects/openai/native.js';
import { guardStream } from '../src/guardrails/answer-guard.js';
import { compileGuardrails, createStreamGuard, type GuardrailRule } from '../src/guardrails/index.js';
import { planCompletion, streamFrames } from '../test/upstream/openai-responses.js';
import { parseChatRequest } from '../test/upstream/openai-request.js';

const { values } = parseArgs({ options: { streams: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '5' } } });
const STREAMS = Number(values.streams);
const ROUNDS = Number(values.rounds);

const rules: GuardrailRule[] = [
  { name: 'cards', kind: 'payment_card', action: 'block' },
  { name: 'emails', kind: 'email', action: 'redact' },
  { name: 'ids', kind: 'national_id', action: 'redact', formats: ['us_ssn', 'uk_nino'] },
  { name: 'keys', kind: 'secret', action: 'redact' },
  { name: 'internal-urls', kind: 'regex', patterns: ['https?://[a-z0-9.-]+\\.corp\\.example\\b'], action: 'redact' },
];
const scanner = compileGuardrails(rules);

const parsed = parseChatRequest({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
if (!parsed.ok) throw new Error('the scripted request did not parse');
const pieces = Array.from({ length: 20 }, (_, i) => `${i === 0 ? '' : ' '}word${i}`);
const texts = streamFrames(planCompletion(parsed.request, pieces))
  .map((frame) => frame.slice('data: '.length).trimEnd())
  .filter((data) => data !== '[DONE]');
/** Each stream's events parsed afresh, as the decoder hands them on. */
const events = (): ResponseEvent[] => texts.map((text) => ({ kind: 'chunk', chunk: JSON.parse(text) as ChatCompletionChunk, native: { format: 'openai', text } }));

const options = {
  scanner: { scan: (value: string) => scanner.scan(value, 'output'), redact: (value: string, found: Parameters<typeof scanner.redact>[1]) => scanner.redact(value, found) },
  newStreamGuard: () => createStreamGuard(scanner, { direction: 'output' }),
  report: () => {},
  blockError: null,
};

let sink = 0;
/** Writes one stream's events as the OpenAI dialect does; returns the text of its answer. */
function write(answer: Observable<ResponseEvent>): string {
  const frame = openAINativeFramer('openai/gpt-4o-mini');
  let content = '';
  answer.subscribe((event) => {
    if (event.kind !== 'chunk') return;
    const own = event.native ? frame(event.native) : null;
    sink += (own ?? `data: ${JSON.stringify(event.chunk)}\n\n`).length;
    const delta = (event.chunk.choices[0] as { delta?: { content?: unknown } } | undefined)?.delta;
    if (typeof delta?.content === 'string') content += delta.content;
  });
  return content;
}

const expected = pieces.join('');
if (write(guardStream(from(events()), options)) !== expected) throw new Error('the guarded stream lost text');

function time(work: () => void): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < STREAMS; i++) work();
  return Number(process.hrtime.bigint() - started) / 1000 / STREAMS;
}

console.log(`${texts.length} events a stream, ${STREAMS} streams a round, ${ROUNDS} rounds taking turns (µs per stream)`);
for (let round = 0; round < ROUNDS; round++) {
  const guarded = time(() => write(guardStream(from(events()), options)));
  const bare = time(() => write(from(events())));
  console.log(`round ${round + 1}: guarded ${guarded.toFixed(2)}  no rules ${bare.toFixed(2)}  guardrails' share ${(guarded - bare).toFixed(2)}`);
}
if (sink === 0) console.log('');
