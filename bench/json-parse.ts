/**
 * What keeping numbers exact adds to reading a request body. Before: JSON.parse and the depth walk (as the body
 * parser did). After: the body parser as it is (the same walk also looks for numbers JSON.parse may have rounded),
 * and a body with a big number, which is parsed again losslessly. Figures, not a test.
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

const request = { url: '/v1/chat/completions' } as FastifyRequest;
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
  time('before: JSON.parse + depth walk', rounds, () => nestsDeeperBefore(JSON.parse(common)));
  time('after: body parser, common body', rounds, () => parseJsonBody(request, common, keep));
  time('after: body parser, body with seed 9223372036854775807', rounds, () => parseJsonBody(request, big, keep));
}
void sink;
