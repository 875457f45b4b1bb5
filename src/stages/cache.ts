import { createHash } from 'node:crypto';
import { defer, from, Observable, of, switchMap, type Subscription } from 'rxjs';
import type { EventBus } from '../bus/bus.js';
import type { CacheLookup, CacheService, NewCacheEntry } from '../cache/cache-service.js';
import { replayChunks, StreamAssembler } from '../cache/answer-codec.js';
import { cacheKeysOf, uncacheableReason, type CacheKeys } from '../cache/request-key.js';
import type { CachedNative } from '../cache/cache-store.js';
import { nativeBodyOf, nativeEventsOf } from '../cache/native-reshape.js';
import { NativeKeeper } from '../cache/native-keeper.js';
import { pacedReplay } from '../cache/paced-replay.js';
import { verbatimChunks, verbatimCompletion } from '../cache/verbatim-replay.js';
import type { ChatCompletion, ResponseEvent } from '../core/canonical.js';
import { headerSafeName } from '../core/header-value.js';
import type { CachePolicy, CachePolicyConfig } from '../core/config.js';
import type { ChatContext, RequestContext, Spent } from '../core/context.js';
import { gatewayError } from '../core/errors.js';
import { ConfigError } from '../config/secret-ref.js';
import { definePlugin } from '../core/plugin.js';
import type { Next, Stage } from '../core/stage.js';
import { BUS, CACHE, LOG } from '../services.js';
import { ANSWER_SHAPING_HEADERS } from '../providers/forward-headers.js';
import type { Log } from '../log.js';
import { subscribeGuarded } from '../core/subscribe-guarded.js';
import { marksUnmetFinish } from '../core/answered-by.js';
import { redactedPrefix, redactSecrets } from '../core/redact-secrets.js';
import { COMPACT_FORMAT } from '../wire/openai-responses/format.js';
import { COMPLETIONS_FORMAT } from '../wire/openai-completions/format.js';

/** The longest TTL a request may ask for (a year), like the config's. */
const MAX_TTL_SECONDS = 31_536_000;
/** Finish reasons of an answer that ended as the model meant it to; `length` (cut off) and `content_filter` are not stored. */
const COMPLETE_FINISH = new Set(['stop', 'tool_calls', 'function_call', 'end_turn']);

/** The cache settings that override the top-level policy for a request, outermost first: its route's, team's, key's. */
function policyLayers(ctx: RequestContext): Array<CachePolicyConfig | null | undefined> {
  return [ctx.plan?.route ? ctx.config.routes.get(ctx.plan.route)?.cache : null, ctx.identity?.team?.cache, ctx.identity?.key.cache];
}

/** The request's cache mode alone, as effectivePolicy gives it (the innermost layer that sets one wins). */
function cacheModeOf(ctx: RequestContext): CachePolicy['mode'] {
  const layers = policyLayers(ctx);
  for (let at = layers.length - 1; at >= 0; at--) {
    const mode = layers[at]?.mode;
    if (mode !== undefined) return mode;
  }
  return ctx.config.cache.policy.mode;
}

/**
 * A stored answer as the chunk events of a stream. The stream's own events (`native`, an answer stored from a client
 * of the provider's own format) ride on the first chunk, as the call stage relays a read's events: the dialect writes
 * them all there and nothing for the chunks after.
 */
function* replayEvents(answer: ChatCompletion, includeUsage: boolean, native: ResponseEvent['native'] | undefined): Generator<ResponseEvent> {
  let first = native !== undefined;
  for (const chunk of replayChunks(answer, includeUsage)) {
    if (first) {
      first = false;
      yield { kind: 'chunk', chunk, native };
    } else yield { kind: 'chunk', chunk };
  }
}

/** The top-level policy, then the route's, the team's and the key's overrides, each field over the one before. */
export function effectivePolicy(ctx: RequestContext): CachePolicy {
  const policy = { ...ctx.config.cache.policy };
  for (const layer of policyLayers(ctx)) {
    if (!layer) continue;
    if (layer.mode !== undefined) policy.mode = layer.mode;
    if (layer.ttl_seconds !== undefined) policy.ttlSeconds = layer.ttl_seconds;
    if (layer.scope !== undefined) policy.scope = layer.scope;
    if (layer.cache_sampled !== undefined) policy.cacheSampled = layer.cache_sampled;
    if (layer.semantic?.enabled !== undefined) policy.semantic = layer.semantic.enabled;
    if (layer.semantic?.threshold !== undefined) policy.threshold = layer.semantic.threshold;
  }
  return policy;
}

/**
 * Whose answers a request may share: the scope's owner id (anonymous callers share among themselves), narrowed to
 * the provider key a client brought (an answer bought with one key is not served to a caller whose key the provider
 * would refuse), and to the client headers that go to the provider with the request and may change its answer
 * (OpenAI's and Anthropic's beta opt-ins, the operator's `forward_headers`).
 */
function scopeOf(ctx: RequestContext, policy: CachePolicy): string {
  let scope = ownerOf(ctx, policy);
  // Plugins the request's route, key or team turn on may change its answer after this stage (a hit skips them):
  // requests share answers only with requests that meet the same ones.
  const listed = listedPlugins(ctx);
  if (listed !== '') scope += `\u0000plugins:${listed}`;
  if (ctx.clientProviderKey !== null) scope += `\u0000byok:${createHash('sha256').update(ctx.clientProviderKey).digest('base64url')}`;
  const forwarded = forwardedValues(ctx);
  if (forwarded !== '') scope += `\u0000${forwarded}`;
  // A namespace the client names (x-tollgate-cache-namespace, LiteLLM's cache.namespace) keeps its answers apart:
  // requests share only with requests of the same namespace, and those without one with each other.
  const namespace = ctx.hints.tollgate.get('cache-namespace');
  if (namespace !== undefined && namespace !== '') scope += `\u0000namespace:${namespace}`;
  return scope;
}

/**
 * What the request is sent to: its route, else the model its plan's first group resolved to. Not the model the client
 * named: a routing rule may have sent it to another `<provider>/<model>` (a `metadata` or budget condition), whose
 * answer must not be served to the same body that no rule redirected (`metadata` is not part of the key).
 */
function plannedTarget(ctx: RequestContext): string {
  return ctx.plan?.route ?? ctx.plan?.groups[0]?.name ?? ctx.request.model;
}

/** The names of the `listed` plugins the request's route, key and team list, sorted and joined; '' for none. */
function listedPlugins(ctx: RequestContext): string {
  const route = ctx.plan?.route ? ctx.config.routes.get(ctx.plan.route)?.plugins : undefined;
  const key = ctx.identity?.key.plugins;
  const team = ctx.identity?.team?.plugins;
  if (!route?.length && !key?.length && !team?.length) return '';
  return [...new Set([...(route ?? []), ...(key ?? []), ...(team ?? [])])].sort().join(',');
}

function ownerOf(ctx: RequestContext, policy: CachePolicy): string {
  if (policy.scope === 'global') return 'global';
  const key = ctx.identity?.key;
  if (!key) return 'anonymous';
  if (policy.scope === 'team' && key.team) return `team:${key.team}`;
  return `key:${key.id}`;
}

/** The names and values of the request's headers that are forwarded upstream and may change the answer, or ''. */
function forwardedValues(ctx: RequestContext): string {
  let out = '';
  const add = (name: string): void => {
    const value = ctx.clientHeaders[name];
    if (value !== undefined) out += `${name}=${Array.isArray(value) ? value.join(', ') : value}\n`;
  };
  for (const name of ANSWER_SHAPING_HEADERS) add(name);
  for (const name of ctx.config.settings.forwardHeaders) if (!ANSWER_SHAPING_HEADERS.includes(name)) add(name);
  return out;
}

/** A positive whole number of seconds from a header, or null when absent; a bad value is the client's error. */
function headerSeconds(value: string | undefined, name: string): number | null {
  if (value === undefined) return null;
  if (!/^\d{1,9}$/.test(value.trim()) || Number(value) <= 0) {
    throw gatewayError('invalid_value', `Invalid '${name}' header: give a whole number of seconds above 0.`, { param: name });
  }
  return Math.min(Number(value), MAX_TTL_SECONDS);
}

/** `Cache-Control: max-age` in whole seconds, or null when absent or not a number (ignored, as HTTP caches do). */
function maxAgeOf(control: ReadonlyMap<string, string | true>): number | null {
  const value = control.get('max-age');
  return typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : null;
}

/** A request's own threshold (it may raise the operator's, never lower it); null when absent. */
function headerThreshold(value: string | undefined): number | null {
  if (value === undefined) return null;
  const threshold = Number(value);
  if (value.trim() === '' || !Number.isFinite(threshold) || threshold < 0 || threshold > 1) {
    throw gatewayError('invalid_value', "Invalid 'x-tollgate-cache-threshold' header: give a similarity between 0 and 1.", { param: 'x-tollgate-cache-threshold' });
  }
  return threshold;
}

/**
 * The response cache, between routing and spend: a hit answers without the spend stage (it costs nothing against
 * budgets; the event records what it saved) and without an upstream call; a miss goes on, and its answer is stored
 * once it ended normally. Every answer says what the cache did in `x-tollgate-cache`.
 */
class CacheStage implements Stage {
  readonly name = 'cache';

  constructor(
    private readonly cache: CacheService,
    private readonly bus: EventBus,
    private readonly log: Log,
  ) {}

  /**
   * Chat requests whose cache mode (config, route, team, key) is not off, but for a compaction (POST
   * /v1/responses/compact): its answer is an encrypted item OpenAI made for that call, not an answer to reuse.
   */
  appliesTo(ctx: RequestContext): boolean {
    return ctx.operation === 'chat' && ctx.native?.format !== COMPACT_FORMAT && ctx.native?.format !== COMPLETIONS_FORMAT && cacheModeOf(ctx) !== 'off';
  }

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    if (ctx.operation !== 'chat' || ctx.native?.format === COMPACT_FORMAT || ctx.native?.format === COMPLETIONS_FORMAT) return next();
    const policy = effectivePolicy(ctx);
    if (policy.mode === 'off') return next();
    const tollgate = ctx.hints.tollgate;
    const control = ctx.hints.cacheControl;
    const optedOut = tollgate.get('cache')?.trim().toLowerCase() === 'off' || control.has('no-store');
    const reason = optedOut ? 'opted out' : uncacheableReason(ctx.request, policy);
    if (reason !== null) {
      ctx.responseHeaders['x-tollgate-cache'] = 'skip';
      return next();
    }
    // A request may keep its answer for less than the policy's TTL, never for more (like the threshold below).
    const ttl = Math.min(headerSeconds(tollgate.get('cache-ttl'), 'x-tollgate-cache-ttl') ?? policy.ttlSeconds, policy.ttlSeconds);
    // The oldest answer it takes: one the current TTL allows (an operator who lowered it stops older answers at once,
    // whatever expiry they were stored with) and, if the client said so, no older than its Cache-Control max-age.
    const maxAge = Math.min(policy.ttlSeconds, maxAgeOf(control) ?? policy.ttlSeconds);
    const threshold = Math.max(policy.threshold, headerThreshold(tollgate.get('cache-threshold')) ?? 0);
    const native = ctx.native && !ctx.native.outdated ? ctx.native : null;
    // A native body holding what its canonical form left out (a document by URL, a Files API upload, a server tool's
    // blocks) has the exact tier only: the semantic tier compares the canonical conversation, in which two such
    // bodies about different documents ask the same question.
    const semantic = policy.semantic && !ctx.native?.untranslatable;
    const keys = cacheKeysOf(ctx.request, `${scopeOf(ctx, policy)}\u0000${plannedTarget(ctx)}`, semantic, native?.body ?? null, native?.apiVersion ?? null);
    // `no-cache`: answer from the provider, but keep its answer for the next request.
    if (control.has('no-cache')) {
      ctx.responseHeaders['x-tollgate-cache'] = 'skip';
      return this.fetchAndStore(ctx, next, keys, null, ttl, semantic);
    }
    return defer(() => {
      const lookup = this.cache.lookup(keys, { ...policy, threshold, ttlSeconds: maxAge }, Date.now());
      // Only a semantic search waits (for its embedding); the exact tier answers at once, without a promise's hop.
      if (lookup instanceof Promise) return from(lookup).pipe(switchMap((found) => this.answer(ctx, next, policy, keys, found, ttl)));
      return this.answer(ctx, next, policy, keys, lookup, ttl);
    });
  }

  private answer(ctx: ChatContext, next: Next, policy: CachePolicy, keys: CacheKeys, lookup: CacheLookup, ttl: number): Observable<ResponseEvent> {
    const { hit } = lookup;
    if (!hit) return (policy.mode === 'on' ? this.coalesced(ctx, next, policy, keys, lookup, ttl) : null) ?? this.missed(ctx, next, policy, keys, lookup, ttl);
    const who = whoAsked(ctx);
    const { entry } = hit;
    if (hit.tier === 'semantic') ctx.responseHeaders['x-tollgate-cache-similarity'] = hit.similarity.toFixed(4);
    if (policy.mode === 'shadow') {
      ctx.responseHeaders['x-tollgate-cache'] = 'shadow-hit';
      this.cache.recordResult('shadow-hit', 0);
      // GET /api/cache shows these to whoever reads the admin API, whether bodies are logged or not: a key pasted into
      // a question is redacted, as are the operator's patterns for kept bodies.
      const patterns = ctx.config.settings.logBodies.redact;
      this.cache.noteShadowHit({
        at: new Date().toISOString(),
        requestId: ctx.id,
        tier: hit.tier,
        similarity: hit.similarity,
        model: redactSecrets(ctx.request.model),
        question: keys.question === null ? null : redactedPrefix(keys.question, 200, patterns),
        matched: entry.question === null ? null : redactedPrefix(entry.question, 200, patterns),
      });
      this.bus.emit('cache.hit', Object.assign(who, { tier: hit.tier, similarity: hit.similarity, savedUsd: 0, served: false }));
      return this.fetchAndStore(ctx, next, keys, lookup.vector, ttl, policy.semantic);
    }
    ctx.responseHeaders['x-tollgate-cache'] = hit.tier === 'exact' ? 'hit-exact' : 'hit-semantic';
    this.cache.recordResult(hit.tier === 'exact' ? 'hit-exact' : 'hit-semantic', entry.costUsd);
    this.cache.served(hit, Date.now());
    this.bus.emit('cache.hit', Object.assign(who, { tier: hit.tier, similarity: hit.similarity, savedUsd: entry.costUsd, served: true }));
    return this.serve(ctx, entry);
  }

  /** A miss: the provider answers, and its answer is stored (and shared with the identical requests that wait for it). */
  private missed(ctx: ChatContext, next: Next, policy: CachePolicy, keys: CacheKeys, lookup: CacheLookup, ttl: number): Observable<ResponseEvent> {
    ctx.responseHeaders['x-tollgate-cache'] = 'miss';
    this.cache.recordResult('miss', 0);
    // The events' own fields are assigned onto `who`, not spread after it (see core/with-fields.ts).
    this.bus.emit('cache.miss', Object.assign(whoAsked(ctx), { semanticSkipped: lookup.semanticSkipped }));
    return this.fetchAndStore(ctx, next, keys, lookup.vector, ttl, policy.semantic);
  }

  /**
   * A miss while an identical request (the same exact key, so the same scope, namespace and model) is being answered by
   * the provider: waits for that answer and is served it as an exact hit (`x-tollgate-cache-coalesced: true`), charged
   * as any hit. If that request fails, is cancelled by its client, or ends without an answer the cache would keep, or
   * takes longer than the wait's bound, this one goes to the provider itself, as a miss. Null when none is in flight.
   */
  private coalesced(ctx: ChatContext, next: Next, policy: CachePolicy, keys: CacheKeys, lookup: CacheLookup, ttl: number): Observable<ResponseEvent> | null {
    if (!this.cache.flights.has(keys.exact)) return null;
    return new Observable<ResponseEvent>((subscriber) => {
      let inner: Subscription | null = null;
      const follow = (source: Observable<ResponseEvent>): void => {
        inner = subscribeGuarded(source, { next: (event) => subscriber.next(event), error: (err: unknown) => subscriber.error(err), complete: () => subscriber.complete() });
      };
      const leave = this.cache.flights.wait(keys.exact, (entry) => {
        // A copy, as a read from the store would give: the stages after this one may change the answer they are given.
        const copy = entry === null ? null : copyOf(entry);
        try {
          follow(copy ? this.servedCoalesced(ctx, copy) : this.missed(ctx, next, policy, keys, lookup, ttl));
        } catch (err) {
          subscriber.error(err);
        }
      });
      // The leader ended between the check and now (it cannot today: both run in one turn); go on as a miss.
      if (leave === null) follow(this.missed(ctx, next, policy, keys, lookup, ttl));
      return () => {
        leave?.();
        (inner as Subscription | null)?.unsubscribe();
      };
    });
  }

  /** An identical request's answer, served to one that waited for it: an exact hit, counted and charged as one. */
  private servedCoalesced(ctx: ChatContext, entry: NewCacheEntry): Observable<ResponseEvent> {
    ctx.responseHeaders['x-tollgate-cache'] = 'hit-exact';
    ctx.responseHeaders['x-tollgate-cache-coalesced'] = 'true';
    this.cache.recordResult('hit-exact', entry.costUsd);
    this.cache.noteCoalesced();
    this.bus.emit('cache.hit', Object.assign(whoAsked(ctx), { tier: 'exact' as const, similarity: 1, savedUsd: entry.costUsd, served: true }));
    return this.serve(ctx, entry);
  }

  /** A stored (or just fetched) answer as this request's own: as a whole answer or replayed as a stream, free. */
  private serve(ctx: ChatContext, entry: NewCacheEntry): Observable<ResponseEvent> {
    ctx.responseHeaders['x-tollgate-provider'] = headerSafeName(entry.provider);
    ctx.responseHeaders['x-tollgate-model'] = headerSafeName(entry.upstreamModel);
    ctx.upstream = { provider: entry.provider, upstreamModel: entry.upstreamModel, attempts: 0, status: 200, fallback: false, answeredModel: undefined };
    const usage = entry.answer.usage ?? null;
    ctx.usage = usage;
    // A hit is free: the tokens are recorded for the log, the charge is nothing, and no token rate limit counts them.
    ctx.spent = {
      usage: { input_tokens: storedCount(usage?.prompt_tokens), output_tokens: storedCount(usage?.completion_tokens), cache_read_tokens: 0, cache_write_tokens: 0 },
      usd: 0,
      priced: true,
      estimated: false,
      cached: true,
    };
    // A client of the format the upstream answered in gets that answer as it came (see CacheEntry.native): in native
    // pass-through its message or events, else (an OpenAI client of an OpenAI-format provider) the provider's text.
    const native = entry.native && entry.native.format === ctx.native?.format ? entry.native : null;
    const verbatim = !ctx.native && entry.native && entry.native.format === ctx.verbatimFormat ? entry.native : null;
    // The name this client asked for, as a live answer shows it (the call stage sets it): the storing request may
    // have named the same model otherwise (a bare `gpt-4o-mini`, another mount's spelling) and shares its key.
    const answer = entry.answer.model === ctx.responseModel ? entry.answer : { ...entry.answer, model: ctx.responseModel };
    if (!ctx.stream) {
      const own = verbatim ? verbatimCompletion(verbatim, answer) : null;
      if (own) return of(own);
      // Stored as a stream, it is served as the message those events make (and the other way round below).
      const body = native ? nativeBodyOf(native) : null;
      if (native && body) {
        const text = body === native.body ? native.text : undefined;
        return of({ kind: 'completion', completion: answer, native: text === undefined ? { format: native.format, body } : { format: native.format, body, text } });
      }
      return of({ kind: 'completion', completion: answer });
    }
    const own = verbatim ? verbatimChunks(verbatim, answer.model) : null;
    if (own) return pacedReplay(ctx, own);
    const includeUsage = ctx.request.stream_options?.include_usage === true;
    const events = native ? nativeEventsOf(native) : null;
    // Made as they go out: a long answer is hundreds of thousands of chunks (not of(...chunks) either: more
    // arguments than a call takes).
    return pacedReplay(ctx, replayEvents(answer, includeUsage, native && events ? { format: native.format, events } : undefined));
  }

  /**
   * Calls the rest of the pipeline and stores its answer if it ended normally (never one that failed or was cut off).
   * `semantic`: the request's policy uses the semantic tier, so an answer stored without the lookup's vector gets one
   * made in the background; with the tier off no embedding is ever made (a model run per miss for nothing).
   *
   * A stream is kept as it passes, to be stored once it ends; one that grows past `max_response_bytes` (the most of a
   * whole answer tollgate reads) is let go by unkept from there on, so a model looping or an endless upstream cannot
   * grow the gateway's memory for every other request. Its chunks reach the client as before.
   */
  private fetchAndStore(ctx: ChatContext, next: Next, keys: CacheKeys, vector: Float32Array | null, ttl: number, semantic: boolean): Observable<ResponseEvent> {
    return new Observable<ResponseEvent>((subscriber) => {
      const askedAt = Date.now();
      // Identical requests arriving meanwhile wait for this answer (see `coalesced`); they are let go, with the answer
      // or without, however this request ends. Null when another identical request leads (this one then did not wait).
      const release = this.cache.flights.lead(keys.exact);
      // Null once the stream grew too large to keep: what they held is then garbage.
      let assembler: StreamAssembler | null = new StreamAssembler();
      let native: NativeKeeper | null = new NativeKeeper(ctx.native?.format ?? ctx.verbatimFormat);
      let completion: ChatCompletion | null = null;
      let source: Observable<ResponseEvent>;
      try {
        source = next();
      } catch (err) {
        // Failed before it began: nobody may wait on it.
        release?.(null);
        throw err;
      }
      const subscription = subscribeGuarded(source, {
        next: (event) => {
          if (assembler !== null && native !== null) {
            if (event.kind === 'chunk') assembler.add(event.chunk);
            else if (event.kind === 'completion') completion = event.completion;
            native.add(event);
            if (event.kind === 'chunk' && assembler.size + native.size > keptBound(ctx)) {
              // A verbatim stream's own events go first: the answer is still stored, and a hit replays it from the
              // canonical answer (chunks cut anew) rather than not at all.
              if (native.keepsChunkEvents && assembler.size <= keptBound(ctx)) native.forget();
              else {
                assembler = null;
                native = null;
                // Nothing will be kept: the requests waiting for it go to the provider now, not at its end.
                release?.(null);
                this.cache.noteTooLarge();
                this.log.info({ requestId: ctx.id, maxResponseBytes: keptBound(ctx) }, 'cache: a streamed answer grew past max_response_bytes; it is not stored');
              }
            }
          }
          subscriber.next(event);
        },
        error: (err: unknown) => {
          release?.(null);
          subscriber.error(err);
        },
        complete: () => {
          // The spend stage settled before this (a completed answer's cost is known), so the entry is made now, once:
          // the stages outside this one may change the context as the answer passes them (an MCP agent run sets
          // ctx.spent to the whole run's). The waiters get what is stored, before this request's own end (its
          // teardown would let them go without it).
          const entry = assembler !== null && native !== null ? this.entryOf(ctx, keys, completion ?? assembler.completion(), native.kept(), ttl, Date.now()) : null;
          release?.(entry && !this.cache.purgedSince(askedAt, entry) ? entry : null);
          subscriber.complete();
          if (entry) this.store(ctx, keys, entry, vector, semantic, askedAt);
        },
      });
      return () => {
        // Cancelled by its client (or ended above, when this does nothing): nobody waits past this request's end.
        release?.(null);
        subscription.unsubscribe();
      };
    });
  }

  /** The entry an answer is stored as; null for one the cache does not keep. */
  private entryOf(ctx: ChatContext, keys: CacheKeys, answer: ChatCompletion | null, native: CachedNative | null, ttl: number, now: number): NewCacheEntry | null {
    if (!answer || !ctx.upstream || !kept(ctx, answer)) return null;
    return {
      exactKey: keys.exact,
      semanticScope: keys.semanticScope,
      question: keys.question,
      model: ctx.request.model,
      target: plannedTarget(ctx),
      keyId: ctx.identity?.key.id ?? null,
      teamId: ctx.identity?.team?.id ?? null,
      // A stream the client did not ask usage for has none from the upstream: the counts the spend stage made
      // stand in, so a later hit answers with usage like any answer (the SDKs read `usage` on every one).
      answer: answer.usage ? answer : { ...answer, usage: usageOf(ctx.spent) },
      native,
      provider: ctx.upstream.provider,
      upstreamModel: ctx.upstream.upstreamModel,
      costUsd: ctx.spent?.usd ?? 0,
      createdAt: now,
      expiresAt: now + ttl * 1000,
    };
  }

  private store(ctx: ChatContext, keys: CacheKeys, entry: NewCacheEntry, vector: Float32Array | null, semantic: boolean, askedAt: number): void {
    // Written once the request's after-work (ctx.pending) is done, as the request log is: the entry itself was made
    // as the answer ended.
    void Promise.allSettled(ctx.pending).then(async () => {
      const stored = await this.cache.put(entry, vector, semantic && keys.question !== null ? keys.conversation : null, askedAt);
      // A delete that selects it ran while it was on its way; and an event nobody listens to is not made.
      if (!stored || !this.bus.hasListeners('cache.stored')) return;
      this.bus.emit('cache.stored', { requestId: ctx.id, model: ctx.request.model, entryId: stored.id, semantic: stored.vector !== null, expiresAt: new Date(stored.expiresAt).toISOString() });
    }).catch((err: unknown) => this.log.warn({ err, requestId: ctx.id }, 'cache: could not store an answer'));
  }
}

/** Whether the cache keeps an answer: a complete one the model asked for gave (not a fallback's, see `storable`). */
function kept(ctx: ChatContext, answer: ChatCompletion): boolean {
  // An answer a fallback gave is not kept: it would be served as the model asked for, and after that model is back.
  return ctx.upstream !== null && !ctx.upstream.fallback && storable(answer, marksUnmetFinish(ctx));
}

/** A deep copy of an answer for one request that waited for it; null when it cannot be copied (that request then asks the provider). */
function copyOf(entry: NewCacheEntry): NewCacheEntry | null {
  try {
    return structuredClone(entry);
  } catch {
    return null;
  }
}

/**
 * The most of a streamed answer the cache keeps: the `max_response_bytes` of the provider answering (what it would read
 * of the same answer whole), or the settings' when no provider has answered yet (a stage inside made the stream).
 */
function keptBound(ctx: RequestContext): number {
  const provider = ctx.upstream ? ctx.config.providers.get(ctx.upstream.provider) : undefined;
  return provider?.maxResponseBytes ?? ctx.config.settings.maxResponseBytes;
}

/**
 * Every choice finished as the model meant it to (not cut off by length, not filtered). A Gemini- or Bedrock-format
 * answer's choice with a `native_finish_reason` did not, whatever its finish_reason says: the adapter sets it when the
 * vendor's reason has no OpenAI word (Gemini's MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, OTHER, Converse's
 * malformed_tool_use, all `stop` to the client). Other upstreams' own `native_finish_reason` (OpenRouter puts one on
 * every choice) says nothing of the kind.
 */
function storable(answer: ChatCompletion, marked: boolean): boolean {
  if (answer.choices.length === 0) return false;
  return (answer.choices as Array<{ finish_reason?: string | null; native_finish_reason?: unknown }>).every(
    (choice) => COMPLETE_FINISH.has(choice.finish_reason ?? '') && !(marked && choice.native_finish_reason !== undefined),
  );
}

/**
 * A token count of a stored answer's usage as the upstream wrote it: a count that is not a positive number (a string,
 * an object) is 0. A hit charges nothing, but the request log and the usage rollups add these counts up, and one that
 * is not a number would break their sums.
 */
function storedCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

export default definePlugin({
  name: 'cache',
  requires: [CACHE, BUS, LOG],
  create: (_options, config, services) => {
    const cache = services.get(CACHE);
    try {
      cache.configure(config.cache);
    } catch (err) {
      // An embedder that cannot run (an ONNX model missing from the models folder) refuses the config that names it.
      throw new ConfigError(`cache.semantic.embedder: ${(err as Error).message}`);
    }
    if (config.cache.policy.mode !== 'off' && config.cache.policy.semantic) cache.warmUp();
    return new CacheStage(cache, services.get(BUS), services.get(LOG));
  },
});

/** Who asked, for the cache's events. */
function whoAsked(ctx: RequestContext): { requestId: string; model: string; keyId: string | null; teamId: string | null } {
  return { requestId: ctx.id, model: ctx.request.model, keyId: ctx.identity?.key.id ?? null, teamId: ctx.identity?.team?.id ?? null };
}

/** A completion's usage from what the spend stage counted (null when it counted nothing). */
function usageOf(spent: Spent | null): ChatCompletion['usage'] {
  if (!spent) return null;
  const { input_tokens: prompt, output_tokens: completion } = spent.usage;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
