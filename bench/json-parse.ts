/**
 * What keeping numbers exact adds to reading a request body. Before: the body parser as it was (JSON.parse and the
 * depth walk). After: the body parser as it is (the same walk also looks for numbers JSON.parse may have rounded),
 * and a body with a big number, which is parsed again with that number kept exact. Figures, not a test.
 * Run: npx tsx bench/json-parse.ts
 */
import type { FastifyRequest } from 'fastify';
import { parseJsonBody } from '../src/http/json-body.js';

function chatBody(bytes: number, seed: string): string {
  const words = 'the quick brown fox jumps over 12 lazy dogs at 3.5 km/h; '.repeat(Math.ceil(bytes / 58)).slice(0, bytes);
  return JSON.stringify({
    model: 'openai/gpt-4o-mini',
    temperature: 0.7,
    top_p: 0.95,
    max_tokens: 256,
    seed: 0,
    messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: words }],
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 14 } } } } }],
  }).replace('"seed":0', `"seed":${seed}`);
}

/** The depth walk the body parser made before (objects only). */
function nestsDeeperBefore(value: unknown, limit = 128): boolean {
  if (typeof value !== 'object' || value === null) return false;
  let level: object[] = [value];
  for (let depth = 1; level.length > 0; depth++) {
    if (depth > limit) return true;
    const next: object[] = [];
    for (const node of level) {
      if (Array.isArray(node)) {
        for (let i = 0; i < node.length; i++) if (typeof node[i] === 'object' && node[i] !== null) next.push(node[i] as object);
      } else {
        for (const key in node) {
          const child: unknown = (node as Record<string, unknown>)[key];
          if (typeof child === 'object' && child !== null) next.push(child);
        }
      }
    }
    level = next;
  }
  return false;
}

/** The body parser as it was before (JSON.parse, the depth walk, the callback), to compare like with like. */
function parseBefore(body: string | Buffer, done: (err: Error | null, value?: unknown) => void): void {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (text.length === 0) return done(new Error('empty'));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return done(err as Error);
  }
  if (nestsDeeperBefore(value)) done(new Error('too deep'));
  else done(null, value);
}

const request = { url: '/v1/chat/completions' } as FastifyRequest;
const LONG_DIGITS = /\d{16}/;
let sink: unknown = null;
const keep = (_err: Error | null, value?: unknown): void => {
  sink = value;
};

function time(label: string, rounds: number, run: () => unknown): void {
  for (let i = 0; i < rounds / 10; i++) run();
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) run();
  const ns = Number(process.hrtime.bigint() - start) / rounds;
  console.log(`${label.padEnd(64)} ${(ns / 1000).toFixed(2).padStart(8)} µs`);
}

for (const size of [2_000, 100_000]) {
  const common = chatBody(size, '12345');
  const big = chatBody(size, '9223372036854775807');
  const rounds = size > 10_000 ? 3_000 : 200_000;
  console.log(`\nchat body of ${common.length} bytes`);
  time('before: body parser (JSON.parse + depth walk)', rounds, () => parseBefore(common, keep));
  time('after: body parser, common body', rounds, () => parseJsonBody(request, common, keep));
  // The alternative not taken: finding long digit runs in the text costs a scan of every character.
  time('(not taken) JSON.parse + depth walk + /\\d{16}/ on the text', rounds, () => nestsDeeperBefore(JSON.parse(common)) || LONG_DIGITS.test(common));
  time('after: body parser, body with seed 9223372036854775807', rounds, () => parseJsonBody(request, big, keep));
}
void sink;
