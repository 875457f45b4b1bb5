import { firstValueFrom, lastValueFrom, map, Observable, of, Subject, throwError, toArray } from 'rxjs';
import { beforeEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import type { GatewayEvents } from '../../src/core/events.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { type RuntimeConfig } from '../../src/core/config.js';
import type { ChatCompletion, ResponseEvent } from '../../src/core/canonical.js';
import { GatewayError, gatewayError, INTERNAL_MESSAGE, toGatewayError } from '../../src/core/errors.js';
import { pino } from 'pino';
import { BUS, LOG, ServiceRegistry } from '../../src/services.js';
import { createRequestContext, type RequestContext } from '../../src/core/context.js';
import type { PipelineDefinition } from '../../src/pipeline/definition.js';
import { Pipeline, type StageRegistry } from '../../src/pipeline/runner.js';
import type { Next, Stage } from '../../src/core/stage.js';
import type { PluginDefinition } from '../../src/core/plugin.js';
import { runnerServices } from '../helpers/pipeline-services.js';
import { StageTimeline } from '../../src/core/stage-timeline.js';

const config: RuntimeConfig = resolveRuntimeConfig({ api: {}, file: {} }, {}, 1);

function completion(content: string): ChatCompletion {
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion',
    model: 'test/model',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  };
}

function answer(content: string): ResponseEvent {
  return { kind: 'completion', completion: completion(content) };
}

function contentOf(event: ResponseEvent): string {
  if (event.kind === 'embeddings') throw new Error('no embeddings in these tests');
  const choice = (event.kind === 'completion' ? event.completion.choices[0] : event.chunk.choices[0]) as { message: { content: string } };
  return choice.message.content;
}

/** A factory for a stage built from a run function. */
function factory(name: string, run: (ctx: RequestContext, next: Next) => Observable<ResponseEvent>): PluginDefinition {
  return { name, create: (): Stage => ({ name, run }) };
}

/** A stage that records its request side and response side, then calls next and maps the answer. */
function recorder(name: string, log: string[]): PluginDefinition {
  return factory(name, (_ctx, next) => {
    log.push(`${name}:request`);
    return next().pipe(
      map((event) => {
        log.push(`${name}:response`);
        if (event.kind !== 'completion') return event;
        return answer(`${contentOf(event)}<${name}`);
      }),
    );
  });
}

/** An innermost stage that answers. */
function terminal(name: string, log: string[], content = 'answer'): PluginDefinition {
  return factory(name, () => {
    log.push(`${name}:answer`);
    return of(answer(content));
  });
}

interface Recorded {
  events: { name: string; payload: unknown }[];
  of<K extends keyof GatewayEvents>(name: K): GatewayEvents[K][];
  names(): string[];
}

function record(bus: EventBus): Recorded {
  const events: { name: string; payload: unknown }[] = [];
  const names: (keyof GatewayEvents)[] = ['request.received', 'request.completed', 'request.failed', 'stage.completed', 'provider.attempted'];
  for (const name of names) bus.on(name, (payload) => events.push({ name, payload }));
  return {
    events,
    of: <K extends keyof GatewayEvents>(name: K) => events.filter((e) => e.name === name).map((e) => e.payload as GatewayEvents[K]),
    names: () => events.map((e) => e.name),
  };
}

let bus: EventBus;
let deps: ServiceRegistry;
let events: Recorded;

beforeEach(() => {
  bus = new EventBus();
  // The runner needs only the bus and a log: no database, no transport.
  deps = runnerServices(bus);
  events = record(bus);
});

function registry(...factories: PluginDefinition[]): StageRegistry {
  return new Map(factories.map((f) => [f.name, f]));
}

function definition(...stages: string[]): PipelineDefinition {
  return { name: 'unit', stages };
}

function context(id = 'req-1', stream = false): RequestContext {
  return createRequestContext({ dialect: 'openai', config, request: { model: 'test/model', messages: [{ role: 'user', content: 'hi' }], stream }, id });
}

async function failureOf(observable: Observable<unknown>): Promise<unknown> {
  try {
    await lastValueFrom(observable);
  } catch (err) {
    return err;
  }
  throw new Error('expected the pipeline to fail');
}

describe('Pipeline', () => {
  it('runs stages as an onion: request side in order, response side in reverse', async () => {
    const log: string[] = [];
    const pipeline = new Pipeline(definition('a', 'b', 'c', 'end'), registry(recorder('a', log), recorder('b', log), recorder('c', log), terminal('end', log)), config, deps);
    expect(pipeline.stageNames).toEqual(['a', 'b', 'c', 'end']);
    const out = await lastValueFrom(pipeline.execute(context()).pipe(toArray()));
    expect(log).toEqual(['a:request', 'b:request', 'c:request', 'end:answer', 'c:response', 'b:response', 'a:response']);
    expect(out.map(contentOf)).toEqual(['answer<c<b<a']);
  });

  it('orders stages by the definition, not by the registry', async () => {
    const log: string[] = [];
    const pipeline = new Pipeline(definition('b', 'a', 'end'), registry(recorder('a', log), recorder('b', log), terminal('end', log)), config, deps);
    await lastValueFrom(pipeline.execute(context()));
    expect(log).toEqual(['b:request', 'a:request', 'end:answer', 'a:response', 'b:response']);
  });

  it('does not run the pipeline until subscribed, and runs it again per subscription', async () => {
    const log: string[] = [];
    const pipeline = new Pipeline(definition('a', 'end'), registry(recorder('a', log), terminal('end', log)), config, deps);
    const run = pipeline.execute(context());
    expect(log).toEqual([]);
    expect(events.names()).toEqual([]);
    await lastValueFrom(run);
    expect(log).toHaveLength(3);
    await lastValueFrom(run);
    expect(log).toHaveLength(6);
    expect(events.of('request.received')).toHaveLength(2);
  });

  it('lets a stage answer early; inner stages never run and outer stages see the answer', async () => {
    const log: string[] = [];
    const cacheHit = factory('cache', () => {
      log.push('cache:hit');
      return of(answer('cached'));
    });
    const pipeline = new Pipeline(
      definition('outer', 'cache', 'inner', 'end'),
      registry(recorder('outer', log), cacheHit, recorder('inner', log), terminal('end', log)),
      config,
      deps,
    );
    const out = await lastValueFrom(pipeline.execute(context()).pipe(toArray()));
    expect(out.map(contentOf)).toEqual(['cached<outer']);
    expect(log).toEqual(['outer:request', 'cache:hit', 'outer:response']);
    expect(events.of('stage.completed').map((e) => [e.stage, e.outcome])).toEqual([
      ['outer', 'passed'],
      ['cache', 'answered'],
    ]);
  });

  it('leaves out a stage whose factory returns null', async () => {
    const log: string[] = [];
    let created = 0;
    const unconfigured: PluginDefinition = {
      name: 'budget',
      create: () => {
        created++;
        return null;
      },
    };
    const pipeline = new Pipeline(definition('a', 'budget', 'end'), registry(recorder('a', log), unconfigured, terminal('end', log)), config, deps);
    expect(created).toBe(1);
    expect(pipeline.stageNames).toEqual(['a', 'end']);
    await lastValueFrom(pipeline.execute(context()));
    expect(events.of('stage.completed').map((e) => e.stage)).toEqual(['a', 'end']);
  });

  it('passes a request by a stage whose appliesTo says it has nothing to do: no run, no stage.completed, no timeline entry', async () => {
    const log: string[] = [];
    const asked: string[] = [];
    const picky: PluginDefinition = {
      name: 'picky',
      create: (): Stage => ({
        name: 'picky',
        // Asked as the request reaches it: it sees what the stage before did to the request.
        appliesTo: (ctx) => {
          asked.push(ctx.request.model);
          return ctx.request.model === 'test/picked';
        },
        run: (_ctx, next) => {
          log.push('picky:request');
          return next().pipe(map((event) => (event.kind === 'completion' ? answer(`${contentOf(event)}<picky`) : event)));
        },
      }),
    };
    const renamer = factory('renamer', (ctx, next) => {
      if (ctx.id === 'req-picked') ctx.request.model = 'test/picked';
      return next();
    });
    const pipeline = new Pipeline(definition('renamer', 'picky', 'end'), registry(renamer, picky, terminal('end', log)), config, deps);

    const passedBy = context('req-plain');
    passedBy.timings.stages = new StageTimeline();
    expect((await lastValueFrom(pipeline.execute(passedBy).pipe(toArray()))).map(contentOf)).toEqual(['answer']);
    expect(log).toEqual(['end:answer']);
    expect(events.of('stage.completed').map((e) => e.stage)).toEqual(['renamer', 'end']);
    expect(passedBy.timings.stages.names.slice(0, passedBy.timings.stages.length)).toEqual(['renamer', 'end']);

    events.events.length = 0;
    log.length = 0;
    const picked = context('req-picked');
    expect((await lastValueFrom(pipeline.execute(picked).pipe(toArray()))).map(contentOf)).toEqual(['answer<picky']);
    expect(log).toEqual(['picky:request', 'end:answer']);
    expect(events.of('stage.completed').map((e) => e.stage)).toEqual(['renamer', 'picky', 'end']);
    expect(asked).toEqual(['test/model', 'test/picked']);
  });

  it('gives factories the config and deps once, at construction', () => {
    const seen: [RuntimeConfig, unknown][] = [];
    const spy: PluginDefinition = {
      name: 'spy',
      create: (_options, cfg, d) => {
        seen.push([cfg, d]);
        return null;
      },
    };
    new Pipeline(definition('spy'), registry(spy), config, deps);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.[0]).toBe(config);
    // Each stage gets its own view of the services, holding only what it required (here: nothing).
    expect((seen[0]?.[1] as { has(key: unknown): boolean }).has({ id: 'bus' })).toBe(false);
  });

  it('throws at construction for an unknown stage name', () => {
    const log: string[] = [];
    expect(() => new Pipeline(definition('a', 'missing'), registry(recorder('a', log)), config, deps)).toThrow(/unknown stage "missing"/);
  });

  it('fails with a 500 when no stage answers', async () => {
    const log: string[] = [];
    const pipeline = new Pipeline(definition('a'), registry(recorder('a', log)), config, deps);
    const err = await failureOf(pipeline.execute(context()));
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).status).toBe(500);
  });

  it('emits stage.completed with passed, answered and failed outcomes', async () => {
    const log: string[] = [];
    const failing = factory('guard', () => throwError(() => new GatewayError({ status: 400, type: 'invalid_request_error', code: 'guardrail_blocked', message: 'blocked' })));
    const pipeline = new Pipeline(definition('a', 'guard'), registry(recorder('a', log), failing), config, deps);
    await failureOf(pipeline.execute(context('req-f')));
    const stages = events.of('stage.completed');
    expect(stages.map((e) => [e.requestId, e.stage, e.outcome])).toEqual([
      ['req-f', 'a', 'passed'],
      ['req-f', 'guard', 'failed'],
    ]);
    for (const e of stages) expect(e.durationMs).toBeGreaterThanOrEqual(0);

    const ok = new Pipeline(definition('a', 'end'), registry(recorder('a', log), terminal('end', log)), config, deps);
    await lastValueFrom(ok.execute(context('req-ok')));
    expect(events.of('stage.completed').filter((e) => e.requestId === 'req-ok').map((e) => [e.stage, e.outcome])).toEqual([
      ['a', 'passed'],
      ['end', 'answered'],
    ]);
  });

  it('emits one stage.completed per stage even for a streamed answer of many chunks', async () => {
    const streaming = factory('end', () =>
      of<ResponseEvent[]>(
        ...[1, 2, 3].map((i): ResponseEvent => ({ kind: 'chunk', chunk: { id: 'c', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, message: { content: String(i) } }] } })),
      ),
    );
    const pipeline = new Pipeline(definition('end'), registry(streaming), config, deps);
    const out = await lastValueFrom(pipeline.execute(context('s', true)).pipe(toArray()));
    expect(out).toHaveLength(3);
    expect(events.of('stage.completed')).toHaveLength(1);
    expect(events.of('request.received')[0]?.stream).toBe(true);
  });

  it('reports stage.completed (failed) for a stage whose run() throws synchronously', async () => {
    const log: string[] = [];
    const throwing = factory('auth', () => {
      throw new GatewayError({ status: 401, type: 'authentication_error', code: 'invalid_api_key', message: 'bad key' });
    });
    const pipeline = new Pipeline(definition('auth', 'end'), registry(throwing, terminal('end', log)), config, deps);
    const err = await failureOf(pipeline.execute(context('req-sync')));
    expect((err as GatewayError).status).toBe(401);
    expect(log).toEqual([]);
    expect(events.of('request.failed').map((e) => e.status)).toEqual([401]);
    // Every stage gets stage.completed; a synchronous throw is a failure of that stage.
    expect(events.of('stage.completed').map((e) => [e.stage, e.outcome])).toEqual([['auth', 'failed']]);
  });

  it('emits request.received then stage events then request.completed (cancelled: false)', async () => {
    const log: string[] = [];
    const pipeline = new Pipeline(definition('a', 'end'), registry(recorder('a', log), terminal('end', log)), config, deps);
    const ctx = context('req-ok');
    // What the spend stage would have settled: the terminal event carries it.
    ctx.spent = { usage: { input_tokens: 1, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0 }, usd: 0.5, priced: true, estimated: false };
    await lastValueFrom(pipeline.execute(ctx));
    expect(events.names()).toEqual(['request.received', 'stage.completed', 'stage.completed', 'request.completed']);
    expect(events.of('request.received')[0]).toMatchObject({ requestId: 'req-ok', dialect: 'openai', model: 'test/model', stream: false });
    const completed = events.of('request.completed');
    expect(completed).toHaveLength(1);
    expect(completed[0]).toMatchObject({ requestId: 'req-ok', model: 'test/model', status: 200, cancelled: false, stream: false, usage: { input_tokens: 1, output_tokens: 2 }, costUsd: 0.5 });
    expect(events.of('request.failed')).toEqual([]);
  });

  it('reports the upstream outcome a stage recorded in request.completed', async () => {
    const end = factory('end', (ctx) => {
      ctx.upstream = { provider: 'groq', upstreamModel: 'llama', attempts: 1, status: 200, fallback: false };
      return of(answer('x'));
    });
    await lastValueFrom(new Pipeline(definition('end'), registry(end), config, deps).execute(context()));
    expect(events.of('request.completed')[0]).toMatchObject({ provider: 'groq', upstreamModel: 'llama' });
  });

  it('emits request.failed with the GatewayError status and passes the same error on', async () => {
    const error = new GatewayError({ status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded', message: 'slow down' });
    const pipeline = new Pipeline(definition('limit'), registry(factory('limit', () => throwError(() => error))), config, deps);
    const err = await failureOf(pipeline.execute(context('req-429')));
    expect(err).toBe(error);
    expect(events.names()).toEqual(['request.received', 'stage.completed', 'request.failed']);
    expect(events.of('request.failed')[0]).toMatchObject({
      requestId: 'req-429',
      status: 429,
      type: 'rate_limit_error',
      code: 'rate_limit_exceeded',
      message: 'slow down',
    });
    expect(events.of('request.completed')).toEqual([]);
  });

  it('turns a non-GatewayError into a 500 internal_error without its message', async () => {
    const pipeline = new Pipeline(definition('buggy'), registry(factory('buggy', () => throwError(() => new TypeError('secret internal detail')))), config, deps);
    const err = await failureOf(pipeline.execute(context('req-500')));
    expect(err).toBeInstanceOf(GatewayError);
    const gw = err as GatewayError;
    expect(gw.status).toBe(500);
    expect(gw.code).toBe('internal_error');
    expect(gw.message).not.toContain('secret internal detail');
    expect(events.of('request.failed')[0]).toMatchObject({ status: 500, code: 'internal_error' });
    expect(events.of('request.failed')[0]?.message).not.toContain('secret internal detail');
  });

  it('on unsubscribe before the end emits request.completed (cancelled: true) and tears the inner stage down', async () => {
    const log: string[] = [];
    const upstream = new Subject<ResponseEvent>();
    let tornDown = 0;
    const call = factory('call', () =>
      new Observable<ResponseEvent>((subscriber) => {
        log.push('call:start');
        const sub = upstream.subscribe(subscriber);
        return () => {
          tornDown++;
          sub.unsubscribe();
        };
      }),
    );
    const pipeline = new Pipeline(definition('a', 'call'), registry(recorder('a', log), call), config, deps);
    const received: ResponseEvent[] = [];
    const subscription = pipeline.execute(context('req-gone', true)).subscribe({ next: (e) => received.push(e) });
    upstream.next(answer('partial'));
    expect(received.map(contentOf)).toEqual(['partial<a']);
    expect(events.of('request.completed')).toEqual([]);

    subscription.unsubscribe();
    expect(tornDown).toBe(1);
    expect(upstream.observed).toBe(false);
    const completed = events.of('request.completed');
    expect(completed).toHaveLength(1);
    expect(completed[0]).toMatchObject({ requestId: 'req-gone', cancelled: true, status: 499 });
    expect(events.of('request.failed')).toEqual([]);

    // Nothing more is reported after the client went away.
    subscription.unsubscribe();
    upstream.next(answer('late'));
    upstream.complete();
    expect(events.of('request.completed')).toHaveLength(1);
    expect(received).toHaveLength(1);
  });

  it('does not report a cancellation after the pipeline completed or failed', async () => {
    const ok = new Pipeline(definition('end'), registry(factory('end', () => of(answer('x')))), config, deps);
    await firstValueFrom(ok.execute(context('a')));
    const failing = new Pipeline(definition('end'), registry(factory('end', () => throwError(() => gatewayError('internal_error', INTERNAL_MESSAGE)))), config, deps);
    await failureOf(failing.execute(context('b')));
    expect(events.of('request.completed').map((e) => [e.requestId, e.cancelled])).toEqual([['a', false]]);
    expect(events.of('request.failed').map((e) => e.requestId)).toEqual(['b']);
  });
});

describe('an unexpected error', () => {
  it('is logged with its stack when a stage turned it into a 500 on its way, and the client is told nothing of it', async () => {
    const lines: string[] = [];
    const logged = new ServiceRegistry().set(BUS, bus).set(LOG, pino({ level: 'info' }, { write: (line: string) => lines.push(line) }));
    const broken = new TypeError("Cannot read properties of undefined (reading 'role')");
    // What the call stage does with whatever an adapter throws while building its request.
    const pipeline = new Pipeline(definition('end'), registry(factory('end', () => throwError(() => toGatewayError(broken)))), config, logged);
    const failure = (await failureOf(pipeline.execute(context('req-broken')))) as GatewayError;
    expect(failure).toMatchObject({ status: 500, code: 'internal_error', message: INTERNAL_MESSAGE });
    const entries = lines.map((line) => JSON.parse(line) as { msg: string; requestId?: string; err?: { message: string; stack: string } });
    const entry = entries.find((e) => e.msg === 'unexpected pipeline error');
    expect(entry).toMatchObject({ requestId: 'req-broken', err: { message: broken.message } });
    expect(entry?.err?.stack).toContain('TypeError');

    // A 500 the gateway means (an empty answer, no stage answering) is not an unexpected error.
    lines.length = 0;
    const meant = new Pipeline(definition('end'), registry(factory('end', () => throwError(() => gatewayError('internal_error', 'The upstream answer was empty.')))), config, logged);
    await failureOf(meant.execute(context('req-meant')));
    expect(lines.filter((line) => line.includes('unexpected pipeline error'))).toEqual([]);
  });
});

describe("a request's stage timeline", () => {
  /** A context whose stages the runner records (as a tracer recording the request asks). */
  function timed(id: string, stream = false): RequestContext {
    const ctx = context(id, stream);
    ctx.timings.stages = new StageTimeline();
    return ctx;
  }

  it('records each stage run with its nesting, times and outcome, and nothing when not asked', async () => {
    const log: string[] = [];
    const pipeline = new Pipeline(definition('a', 'b', 'end'), registry(recorder('a', log), recorder('b', log), terminal('end', log)), config, deps);
    const ctx = timed('req-timeline');
    const before = performance.now();
    await lastValueFrom(pipeline.execute(ctx));
    const stages = ctx.timings.stages as StageTimeline;
    expect(stages.names).toEqual(['a', 'b', 'end']);
    // Each runs inside the one before; the innermost answered, the others passed the request on.
    expect(stages.parents).toEqual([-1, 0, 1]);
    expect(stages.outcomes).toEqual(['passed', 'passed', 'answered']);
    for (let i = 0; i < 3; i++) {
      expect(stages.starts[i]).toBeGreaterThanOrEqual(before);
      expect(stages.ends[i]).toBeGreaterThanOrEqual(stages.starts[i] as number);
    }
    // A child starts after and ends before its parent.
    expect(stages.starts[2]).toBeGreaterThanOrEqual(stages.starts[1] as number);
    expect(stages.ends[2]).toBeLessThanOrEqual(stages.ends[1] as number);
    expect(stages.innermostRunning()).toBe(-1);

    const plain = context('req-untimed');
    await lastValueFrom(pipeline.execute(plain));
    expect(plain.timings.stages).toBeNull();
  });

  it('marks a stage that throws, and the ones it failed through, as failed with the error', async () => {
    const boom = new Error('boom');
    const pipeline = new Pipeline(
      definition('a', 'thrower'),
      registry(
        recorder('a', []),
        factory('thrower', () => {
          throw boom;
        }),
      ),
      config,
      deps,
    );
    const ctx = timed('req-throws');
    await failureOf(pipeline.execute(ctx));
    const stages = ctx.timings.stages as StageTimeline;
    expect(stages.names).toEqual(['a', 'thrower']);
    expect(stages.outcomes).toEqual(['failed', 'failed']);
    expect(stages.errors[1]).toBe(boom);
  });

  it('records a stage run twice when a stage passes the request on twice, and marks runs the client left as cancelled', async () => {
    // A retrying plugin: calls next() again after the first answer failed.
    let calls = 0;
    const flaky = factory('flaky', () => (++calls === 1 ? throwError(() => gatewayError('upstream_unreachable', 'first fails')) : of(answer('second'))));
    const retry = factory('retry', (_ctx, next) => new Observable<ResponseEvent>((subscriber) => {
      next().subscribe({ error: () => next().subscribe(subscriber), next: (e) => subscriber.next(e), complete: () => subscriber.complete() });
    }));
    const pipeline = new Pipeline(definition('retry', 'flaky'), registry(retry, flaky), config, deps);
    const ctx = timed('req-twice');
    await lastValueFrom(pipeline.execute(ctx));
    const stages = ctx.timings.stages as StageTimeline;
    expect(stages.names).toEqual(['retry', 'flaky', 'flaky']);
    expect(stages.parents).toEqual([-1, 0, 0]);
    expect(stages.outcomes).toEqual(['passed', 'failed', 'answered']);

    // A stream the client leaves: every stage still running ends as cancelled.
    const endless = new Subject<ResponseEvent>();
    const streaming = new Pipeline(definition('a', 'source'), registry(recorder('a', []), factory('source', () => endless)), config, deps);
    const left = timed('req-left', true);
    const subscription = streaming.execute(left).subscribe();
    expect((left.timings.stages as StageTimeline).innermostRunning()).toBe(1);
    subscription.unsubscribe();
    expect((left.timings.stages as StageTimeline).outcomes).toEqual(['cancelled', 'cancelled']);
  });
});
