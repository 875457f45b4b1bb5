// Why tollgate copies objects with `withFields` (src/core/with-fields.ts) instead of `{ ...source, field }` when the
// field is new: on Node 20, once the code is optimized, each object such a literal makes gets a hidden class of its
// own, and making it takes V8's slow path. Prints, for each way of adding fields to a copy, the µs per object and
// whether two objects made the same way share one hidden class. Figures only.
//
//   node --allow-natives-syntax --import tsx bench/object-shapes.ts
import { withFields } from '../src/core/with-fields.js';

/** `%HaveSameMap`, reachable only with --allow-natives-syntax (a parse error otherwise, hence the Function). */
const sameShape = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

const SSE = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };
/** A request's own response headers, built field by field as the stages build them. */
function responseHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  headers['x-tollgate-provider'] = 'openai';
  headers['x-tollgate-model'] = 'gpt-4o-mini';
  headers['x-tollgate-attempts'] = '1';
  headers['x-tollgate-fallback'] = 'false';
  return headers;
}
const chunk = (): Record<string, unknown> => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [] });

const ways: Array<[string, () => object]> = [
  ['{ ...headers, ...SSE } (adds three fields)', () => ({ ...responseHeaders(), ...SSE })],
  ['Object.assign(headers copy, SSE)', () => Object.assign({ 'x-request-id': 'r', ...responseHeaders() }, SSE)],
  ['{ ...chunk, usage: null } (adds a field)', () => ({ ...chunk(), usage: null })],
  ['withFields(chunk, { usage: null })', () => withFields(chunk(), { usage: null })],
  ['{ ...chunk, choices: [] } (overrides a field)', () => ({ ...chunk(), choices: [] })],
];

for (const [, make] of ways) for (let i = 0; i < 50_000; i++) make();
console.log('| way | µs per object | two objects share a hidden class |');
console.log('| --- | ---: | --- |');
for (const [name, make] of ways) {
  const count = 500_000;
  const started = process.cpuUsage();
  for (let i = 0; i < count; i++) make();
  const used = process.cpuUsage(started);
  console.log(`| ${name} | ${((used.user + used.system) / count).toFixed(3)} | ${sameShape(make(), make()) ? 'yes' : 'no'} |`);
}
