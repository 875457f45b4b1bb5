// What the request log and the usage rollups cost a request, in process: the two bus subscribers as the gateway
// wires them (RequestLogWriter into the GovernanceStore's LMDB databases, UsageRollupWriter's deltas) fed the events
// of finished requests (an upstream attempt, then `request.completed`), ten requests a turn whose entries share one
// commit, the rollups written every 5,000 requests (once a second at that rate), minus the same events emitted to a
// bus without those subscribers. CPU µs per request: the whole, and the commits' and rollup writes' share of it.
// Anonymous requests (tollgate as installed) by default; `--keyed` adds a key and a team (one more index row).
// Figures, not a pass/fail test.
//
//   npx tsx bench/request-log.ts [--requests 20000] [--rounds 5] [--keyed]
//
// tsx wraps every closure the sources make in `__name()`, which the shipped build does not: to measure as shipped,
// and two commits taking turns, bundle it in each checkout (copy this file into the other's bench/ first) and run
// the bundles in turn:
//   npx esbuild bench/request-log.ts --bundle --platform=node --format=esm --packages=external --outfile=bench/.tmp/request-log.mjs
//   for i in 1 2 3; do node ../before/bench/.tmp/request-log.mjs; node bench/.tmp/request-log.mjs; done
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { open } from 'lmdb';
import { EventBus } from '../src/bus/bus.js';
import { newRequestId } from '../src/core/request-id.js';
import type { GatewayEvents } from '../src/core/events.js';
import { GovernanceStore } from '../src/governance/governance-store.js';
import { UsageRollups } from '../src/governance/usage-rollups.js';
import { createLog } from '../src/log.js';
import { commitWaiting } from '../src/store/commit.js';
import { RequestLogWriter } from '../src/telemetry/request-log.js';
import { UsageRollupWriter } from '../src/telemetry/usage-rollup.js';

const { values } = parseArgs({
  options: { requests: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '5' }, keyed: { type: 'boolean', default: false } },
});
const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);
const KEYED = values.keyed;
/** Requests whose entries share a commit (as a loaded gateway's do within the 5 ms window). */
const BATCH = 10;
/** Requests between two writes of the rollups. */
const ROLLUP_EVERY = 5_000;

const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-request-log-'));
const root = open({ path: join(dir, 'tollgate.lmdb'), maxDbs: 48, compression: false, noSync: true });
const log = createLog('silent');
const on = new EventBus();
const off = new EventBus();
const governance = new GovernanceStore(root, on);
const writer = new RequestLogWriter(on, governance, log);
const usage = new UsageRollupWriter(on, new UsageRollups(root), log);

/** The terminal event as the runner builds it (summaryOf, then the event's own field), fresh per request. */
function completed(requestId: string, n: number): GatewayEvents['request.completed'] {
  return {
    requestId,
    dialect: 'openai',
    path: '/v1/chat/completions',
    operation: 'chat',
    model: 'openai/gpt-4o-mini',
    route: null,
    provider: 'openai',
    upstreamModel: 'gpt-4o-mini',
    keyId: KEYED ? 'key_4f0c2a' : null,
    teamId: KEYED ? 'team_1' : null,
    stream: (n & 1) === 1,
    status: 200,
    durationMs: 1.234 + (n % 7) * 0.1,
    attempts: 1,
    cache: null,
    guardrails: null,
    fallback: false,
    upstreamMs: 0.912,
    firstTokenMs: 1.01,
    finishReasons: ['stop'],
    user: null,
    metadata: null,
    usage: { input_tokens: 14, output_tokens: 20, cache_read_tokens: 0, cache_write_tokens: 0 },
    costUsd: 0.0000141,
    priced: true,
    estimated: false,
    bodies: null,
    cancelled: false,
  };
}

function request(bus: EventBus, n: number): void {
  const requestId = newRequestId();
  bus.emit('provider.attempted', { requestId, provider: 'openai', model: 'gpt-4o-mini', attempt: 1, ok: true, status: 200, durationMs: 0.9, errorCode: null });
  bus.emit('request.completed', completed(requestId, n));
}

function cpu(): number {
  const used = process.cpuUsage();
  return used.user + used.system;
}

let done = 0;
/** CPU µs per request of a round; with the subscribers, also the commits' and the rollup writes' share. */
async function round(bus: EventBus): Promise<{ whole: number; commits: number; rollups: number }> {
  let commits = 0;
  let rollups = 0;
  const started = cpu();
  for (let sent = 0; sent < REQUESTS; sent += BATCH) {
    for (let i = 0; i < BATCH; i++) request(bus, done++);
    // The turn ends; the window's entries commit together (the gateway's 5 ms timer, taken at once here).
    await new Promise((resolve) => setImmediate(resolve));
    const before = cpu();
    commitWaiting(root);
    commits += cpu() - before;
    if ((sent + BATCH) % ROLLUP_EVERY === 0) {
      const flushing = cpu();
      await usage.flush();
      rollups += cpu() - flushing;
    }
  }
  await writer.flush();
  return { whole: (cpu() - started) / REQUESTS, commits: commits / REQUESTS, rollups: rollups / REQUESTS };
}

for (let i = 1; i <= ROUNDS; i++) {
  const base = await round(off);
  const logged = await round(on);
  const js = logged.whole - base.whole - logged.commits - logged.rollups;
  console.log(
    `round ${i}: request log + rollups ${(logged.whole - base.whole).toFixed(2)} µs a request (commits ${logged.commits.toFixed(2)}, rollup writes ${logged.rollups.toFixed(2)}, the rest ${js.toFixed(2)})${KEYED ? ', keyed' : ''}`,
  );
}
writer.stop();
await usage.close();
await root.close();
rmSync(dir, { recursive: true, force: true });
