// What the response cache costs a request that misses, in process: the cache stage as the gateway runs it (its key,
// the exact-tier lookup in LMDB, the answer kept as it passes and stored with its index rows, the commits shared by
// ten requests), against a stand-in for the rest of the pipeline that answers at once, minus the same requests with
// the cache off. New questions every request, the semantic tier off, as in the suite's full-pipeline target. CPU µs
// per request: the request's side alone (key and lookup), JSON answers and 20-chunk streams (with the commits' share).
// Figures, not a pass/fail test.
//
//   npx tsx bench/cache-miss.ts [--requests 8000] [--rounds 4]
//
// tsx wraps every closure the sources make in `__name()` (a defineProperty per closure made), which the shipped build
// does not: to measure as shipped, and two commits taking turns, bundle it in each checkout (copy this file into the
// other's bench/ first) and run the bundles in turn:
//   npx esbuild bench/cache-miss.ts --bundle --platform=node --format=esm --packages=external --outfile=bench/.tmp/cache-miss.mjs
//   for i in 1 2 3; do node ../before/bench/.tmp/cache-miss.mjs; node bench/.tmp/cache-miss.mjs; done
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { open } from 'lmdb';
import { lastValueFrom, Observable } from 'rxjs';
import { EventBus } from '../src/bus/bus.js';
import { CacheService } from '../src/cache/cache-service.js';
import { resolveRuntimeConfig } from '../src/config/runtime.js';
import type { ResponseEvent as Event } from '../src/core/canonical.js';
import type { RuntimeConfig } from '../src/core/config.js';
import { createRequestContext } from '../src/core/context.js';
import { createLog } from '../src/log.js';
import * as services from '../src/services.js';
import stagePlugin from '../src/stages/cache.js';
import { commitWaiting } from '../src/store/commit.js';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '8000' }, rounds: { type: 'string', default: '4' } } });
const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);
/** Requests in flight together, whose background writes share a commit (as a loaded gateway's do). */
const BATCH = 10;

const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-cache-miss-'));
const root = open({ path: join(dir, 'tollgate.lmdb'), maxDbs: 48, compression: false, noSync: true });
const log = createLog('silent');
const cache = new CacheService(root, join(dir, 'tollgate.lmdb'), dir, log);
const registry = new services.ServiceRegistry().set(services.CACHE, cache).set(services.BUS, new EventBus()).set(services.LOG, log);
type Run = (ctx: unknown, next: () => Observable<Event>) => Observable<Event>;
function stageFor(mode: 'on' | 'off'): { config: RuntimeConfig; run: Run } {
  const config = resolveRuntimeConfig({ api: {}, file: { cache: { mode, semantic: { enabled: false } } } as never }, {}, 1);
  const stage = stagePlugin.create(undefined, config, registry.scoped('cache', stagePlugin.requires ?? []));
  if (!stage) throw new Error('the cache stage did not start');
  return { config, run: stage.run.bind(stage) as Run };
}
/** The stage with the cache off passes every request on: what the bench itself costs, taken off the figures. */
const on = stageFor('on');
const off = stageFor('off');

const WORDS = Array.from({ length: 20 }, (_, i) => `word${i} `);
const MODEL = 'openai/gpt-4o-mini';
const completion = {
  id: 'chatcmpl-bench', object: 'chat.completion', created: 1_764_400_000, model: MODEL,
  choices: [{ index: 0, message: { role: 'assistant', content: WORDS.join(''), refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 14, completion_tokens: 20, total_tokens: 34 },
} as const;
/** A stream's events as the scripted upstream writes them: the role, twenty pieces, the finish reason, and the usage. */
const EVENT_TEXTS = ((): string[] => {
  const base = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_764_400_000, model: MODEL };
  const out: object[] = [{ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] }];
  for (const word of WORDS) out.push({ ...base, choices: [{ index: 0, delta: { content: word }, logprobs: null, finish_reason: null }] });
  out.push({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] });
  out.push({ ...base, choices: [], usage: completion.usage });
  return out.map((chunk) => JSON.stringify(chunk));
})();
const COMPLETION_TEXT = JSON.stringify(completion);
/** Parsed per request, as the provider's decoder makes them (objects of JSON.parse's shapes, not the bench's). */
function chunks(): Event[] {
  return EVENT_TEXTS.map((text): Event => ({ kind: 'chunk', chunk: JSON.parse(text) as never }));
}

let asked = 0;
type Answer = 'json' | 'stream' | 'none';
/**
 * One request through the stage, the pipeline after it answering at once as a provider would; `none`: it ends
 * without an answer (nothing is stored), to time the request's side alone (the key and the lookup).
 */
function request(stage: typeof on, answer: Answer): Promise<unknown> {
  const stream = answer === 'stream';
  const { config } = stage;
  const content = `hello there, how are you today? This is question ${++asked}.`;
  const ctx = createRequestContext({ dialect: 'openai', config, request: { model: MODEL, messages: [{ role: 'user', content }], ...(stream ? { stream: true } : {}) } });
  const next = (): Observable<Event> =>
    new Observable<Event>((subscriber) => {
      ctx.upstream = { provider: 'openai', upstreamModel: 'gpt-4o-mini', attempts: 1, status: 200, fallback: false, answeredModel: undefined };
      ctx.spent = { usage: { input_tokens: 14, output_tokens: 20, cache_read_tokens: 0, cache_write_tokens: 0 }, usd: 0.0000141, priced: true, estimated: false, cached: false };
      if (stream) for (const event of chunks()) subscriber.next(event);
      else if (answer === 'json') subscriber.next({ kind: 'completion', completion: JSON.parse(COMPLETION_TEXT) as never });
      subscriber.complete();
    });
  return lastValueFrom(stage.run(ctx, next), { defaultValue: null });
}

/** CPU µs per request of the shared commits alone, in the last round. */
let commits = 0;
async function round(stage: typeof on, answer: Answer): Promise<number> {
  let committing = 0;
  const started = process.cpuUsage();
  for (let done = 0; done < REQUESTS; done += BATCH) {
    const answers: Array<Promise<unknown>> = [];
    for (let i = 0; i < BATCH; i++) answers.push(request(stage, answer));
    await Promise.all(answers);
    // The answers' stores run once their (empty) pending charges settle; then their shared commit.
    await new Promise((resolve) => setImmediate(resolve));
    const before = process.cpuUsage();
    commitWaiting(root);
    const after = process.cpuUsage(before);
    committing += after.user + after.system;
  }
  if (stage === on) commits = committing / REQUESTS;
  const used = process.cpuUsage(started);
  return (used.user + used.system) / REQUESTS;
}

for (let i = 1; i <= ROUNDS; i++) {
  const asking = (await round(on, 'none')) - (await round(off, 'none'));
  const json = (await round(on, 'json')) - (await round(off, 'json'));
  const jsonCommits = commits;
  const streamed = (await round(on, 'stream')) - (await round(off, 'stream'));
  const streamCommits = commits;
  const figures = `request side ${asking.toFixed(2)} µs, json ${json.toFixed(1)} µs (commits ${jsonCommits.toFixed(1)}), stream ${streamed.toFixed(1)} µs (commits ${streamCommits.toFixed(1)})`;
  console.log(`round ${i}: the cache's CPU per miss: ${figures} (${cache.report().entries as number} entries)`);
}
await root.close();
rmSync(dir, { recursive: true, force: true });
