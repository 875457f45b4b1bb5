// What a virtual key costs the stages that act on it, in process: auth, rate-limit, route and spend run on a
// request as the pipeline chains them, the call stage replaced by an answer given at once (its upstream and usage
// set as the call stage sets them), ten requests at a time so their spends commit together at the end of the turn
// as under load. A request with a key (rate limit, tokens per minute and a budget, as `npm run bench`'s
// tollgate-key) against the same request without one: the difference is the key's own cost, auth's hash and reads,
// the limiter's buckets, the budget's reservation and the spend commit (the LMDB write included). With `--base
// <another worktree>` that tree's stages and stores run too (each on a database of its own), taking turns with this
// one's, so two commits compare in one process. Figures only.
//
//   [BENCH_KEY_BODY='{"name":"k"}'] npx tsx bench/key-stages.ts [--requests 20000] [--rounds 6] [--base /work/wt-X-base]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { open, type RootDatabase } from 'lmdb';
import { lastValueFrom, of, type Observable } from 'rxjs';
import type * as BusModule from '../src/bus/bus.js';
import type * as RuntimeModule from '../src/config/runtime.js';
import type * as ContextModule from '../src/core/context.js';
import type * as GovernanceModule from '../src/governance/governance-store.js';
import type * as LimiterModule from '../src/governance/rate-limiter.js';
import type * as ReservationsModule from '../src/governance/reservations.js';
import type * as LogModule from '../src/log.js';
import type * as HealthModule from '../src/routing/health-registry.js';
import type * as ServicesModule from '../src/services.js';
import type { ResponseEvent } from '../src/core/canonical.js';
import type { RequestContext } from '../src/core/context.js';
import type { PluginDefinition } from '../src/core/plugin.js';
import type { Stage } from '../src/core/stage.js';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '6' }, base: { type: 'string' } } });
const perRound = Number(values.requests);
// BENCH_KEY_BODY: another key (as `npm run bench` takes it), to see what each of its limits costs.
const keyBody: unknown = JSON.parse(process.env.BENCH_KEY_BODY ?? '{"name":"bench","budget":1000000,"budget_period":"monthly","rate_limit":10000000,"tokens_per_minute":1000000000}');

const completion = { id: 'c', object: 'chat.completion', created: 0, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there!' }, finish_reason: 'stop' }] };
const usage = { prompt_tokens: 14, completion_tokens: 4, total_tokens: 18 };

interface Build {
  oneRequest(keyed: boolean): Promise<ResponseEvent>;
  root: RootDatabase;
  dataDir: string;
}

/** One tree's stages, stores and services, imported from its sources, on a database of its own. */
async function build(tree: string): Promise<Build> {
  const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(join(tree, 'src', path)).href)) as T;
  const { EventBus } = await load<typeof BusModule>('bus/bus.ts');
  const { resolveRuntimeConfig } = await load<typeof RuntimeModule>('config/runtime.ts');
  const { createRequestContext } = await load<typeof ContextModule>('core/context.ts');
  const { GovernanceStore } = await load<typeof GovernanceModule>('governance/governance-store.ts');
  const { SlidingWindowLimiter } = await load<typeof LimiterModule>('governance/rate-limiter.ts');
  const { Reservations } = await load<typeof ReservationsModule>('governance/reservations.ts');
  const { createLog } = await load<typeof LogModule>('log.ts');
  const { HealthRegistry } = await load<typeof HealthModule>('routing/health-registry.ts');
  const { BUS, GOVERNANCE, HEALTH, LIMITER, LOG, RESERVATIONS, ServiceRegistry } = await load<typeof ServicesModule>('services.ts');
  const plugins = await Promise.all(['auth', 'rate-limit', 'route', 'spend'].map(async (name) => (await load<{ default: PluginDefinition }>(`stages/${name}.ts`)).default));

  const dataDir = mkdtempSync(join(tmpdir(), 'key-stages-'));
  const root = open({ path: dataDir, noSync: true });
  const bus = new EventBus();
  const governance = new GovernanceStore(root, bus);
  const config = resolveRuntimeConfig({ api: {}, file: { providers: { openai: { base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-bench' } } } }, {}, 0);
  const services = new ServiceRegistry()
    .set(BUS, bus)
    .set(LOG, createLog('silent'))
    .set(GOVERNANCE, governance)
    .set(LIMITER, new SlidingWindowLimiter())
    .set(RESERVATIONS, new Reservations())
    .set(HEALTH, new HealthRegistry(bus));
  const stages = plugins.map((plugin) => plugin.create(undefined, config, services.scoped(plugin.name, plugin.requires ?? [])) as Stage);
  const { key: secret } = await governance.createKey(keyBody);

  /** The call stage's stand-in: what it leaves on the context, and one answer. */
  const answer = (ctx: RequestContext): Observable<ResponseEvent> => {
    ctx.upstream = { provider: 'openai', upstreamModel: 'gpt-4o-mini', attempts: 1, status: 200, fallback: false };
    ctx.usage = usage as RequestContext['usage'];
    return of({ kind: 'completion', completion } as unknown as ResponseEvent);
  };
  const chain = (ctx: RequestContext, index: number): Observable<ResponseEvent> => {
    const stage = stages[index];
    return stage ? stage.run(ctx, () => chain(ctx, index + 1)) : answer(ctx);
  };
  return {
    root,
    dataDir,
    oneRequest(keyed) {
      const ctx = createRequestContext({
        dialect: 'openai', path: '/v1/chat/completions', config, credential: keyed ? secret : null,
        request: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello in one short sentence, please.' }] },
      });
      return lastValueFrom(chain(ctx, 0));
    },
  };
}

async function run(tree: Build, keyed: boolean, total: number): Promise<number> {
  const started = process.cpuUsage();
  for (let i = 0; i < total; i += 10) await Promise.all(Array.from({ length: 10 }, () => tree.oneRequest(keyed)));
  const used = process.cpuUsage(started);
  return (used.user + used.system) / total;
}

const builds: Record<string, Build> = { this: await build(fileURLToPath(new URL('..', import.meta.url))) };
if (values.base) builds.base = await build(resolve(values.base));
for (const tree of Object.values(builds)) for (const keyed of [false, true]) await run(tree, keyed, 5000);
const rows: Record<string, Array<[number, number]>> = Object.fromEntries(Object.keys(builds).map((name) => [name, []]));
for (let round = 0; round < Number(values.rounds); round++) {
  const order = round % 2 === 0 ? Object.keys(builds) : Object.keys(builds).reverse();
  for (const name of order) {
    const tree = builds[name] as Build;
    rows[name]?.push([await run(tree, false, perRound), await run(tree, true, perRound)]);
  }
}
const median = (list: number[]): number => [...list].sort((a, b) => a - b)[list.length >> 1] as number;
console.log('| build | round | anonymous µs/req | virtual key µs/req | key extra µs |\n| --- | ---: | ---: | ---: | ---: |');
for (const [name, list] of Object.entries(rows)) {
  list.forEach(([anon, keyed], i) => console.log(`| ${name} | ${i + 1} | ${anon.toFixed(1)} | ${keyed.toFixed(1)} | ${(keyed - anon).toFixed(1)} |`));
  console.log(`| ${name} | median | ${median(list.map((r) => r[0])).toFixed(1)} | ${median(list.map((r) => r[1])).toFixed(1)} | ${median(list.map((r) => r[1] - r[0])).toFixed(1)} |`);
}
for (const tree of Object.values(builds)) {
  await tree.root.close();
  rmSync(tree.dataDir, { recursive: true, force: true });
}
