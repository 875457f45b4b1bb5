import { defer, from, mergeMap, Observable, throwError } from 'rxjs';
import { thresholdsCrossed } from '../core/budget-thresholds.js';
import type { ChatCompletion, ChatCompletionChunk, CompletionUsage, ResponseEvent } from '../core/canonical.js';
import type { Identity, RequestContext, Spent } from '../core/context.js';
import { CHARGE_TO } from '../core/guardrail-keys.js';
import type { PeriodUsage, VirtualKeyRecord } from '../core/identity.js';
import { definePlugin } from '../core/plugin.js';
import type { Next, Stage } from '../core/stage.js';
import type { TokenUsage } from '../core/usage.js';
import type { EventBus } from '../bus/bus.js';
import { costOf, unitPrices } from '../catalog/prices.js';
import { GatewayError } from '../core/errors.js';
import type { GovernanceStore } from '../governance/governance-store.js';
import { deadKey, deletedKey } from '../governance/key-check.js';
import { plausibleUsage } from '../governance/plausible-usage.js';
import { checkRequestNumbers } from '../governance/request-numbers.js';
import { reservedOutputTokens, targetsOf } from '../governance/output-reserve.js';
import type { Reservations } from '../governance/reservations.js';
import { mediaReserveTokens, promptTokensOf } from '../governance/prompt-tokens.js';
import { TokenCounter } from '../tokens/tokenizer.js';
import { ReceivedText } from '../tokens/received-text.js';
import { BUS, GOVERNANCE, LOG, RESERVATIONS } from '../services.js';
import type { Log } from '../log.js';
import { gatewayError } from '../core/errors.js';
import { subscribeGuarded } from '../core/subscribe-guarded.js';

interface Account {
  kind: 'key' | 'team';
  id: string;
  name: string;
  budget: number;
  usage: PeriodUsage;
}

/** What a delta or message may hold of a reasoning model's thinking (one of the names; some servers send both). */
interface ReasoningFields {
  reasoning_content?: unknown;
  reasoning?: unknown;
}

/** Its reasoning text: `reasoning_content` (DeepSeek, and Anthropic's and Gemini's thinking here), else `reasoning` (OpenRouter, Groq, vLLM). */
function reasoningOf(fields: ReasoningFields): string | null {
  if (typeof fields.reasoning_content === 'string') return fields.reasoning_content;
  return typeof fields.reasoning === 'string' ? fields.reasoning : null;
}

/**
 * Text the client received, for counting completion tokens when the upstream reports no usage: the answer's
 * (content, tool arguments) and apart from it the reasoning's, which an upstream may report a count of its own for.
 */
interface Received {
  answer: ReceivedText;
  reasoning: ReceivedText;
}

function chunkText(chunk: ChatCompletionChunk, into: Received): void {
  for (const choice of chunk.choices as Array<{ delta?: ReasoningFields & { content?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> } }>) {
    const delta = choice.delta;
    if (!delta) continue;
    if (typeof delta.content === 'string') into.answer.add(delta.content);
    const reasoning = reasoningOf(delta);
    if (reasoning !== null) into.reasoning.add(reasoning);
    for (const call of delta.tool_calls ?? []) if (typeof call.function?.arguments === 'string') into.answer.add(call.function.arguments);
  }
}

function completionText(completion: ChatCompletion, into: Received): void {
  for (const choice of completion.choices as Array<{ message?: ReasoningFields & { content?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> } }>) {
    const message = choice.message;
    if (!message) continue;
    if (typeof message.content === 'string') into.answer.add(message.content);
    const reasoning = reasoningOf(message);
    if (reasoning !== null) into.reasoning.add(reasoning);
    for (const call of message.tool_calls ?? []) if (typeof call.function?.arguments === 'string') into.answer.add(call.function.arguments);
  }
}

/**
 * The highest price per million tokens among the places the plan may send the request: every candidate of its
 * route's targets and of each fallback step (routing rules already applied by the route stage). Unknown prices
 * count as zero: such requests cost nothing (and are reported as `cost.unpriced`).
 */
function worstPrices(ctx: RequestContext): { input: number; output: number; perRequest: number } {
  let input = 0;
  let output = 0;
  let perRequest = 0;
  for (const group of ctx.plan?.groups ?? []) {
    for (const candidate of group.candidates) {
      const provider = ctx.config.providers.get(candidate.target.provider.name);
      if (!provider) continue;
      const prices = unitPrices(provider, candidate.target.model, ctx.plan?.price ?? null);
      if (!prices) continue;
      input = Math.max(input, prices.input_per_mtok);
      output = Math.max(output, prices.output_per_mtok);
      perRequest = Math.max(perRequest, prices.request_usd);
    }
  }
  return { input, output, perRequest };
}

/**
 * Seconds a request refused only for the money held by requests in flight is told to wait: the holds are settled to
 * what those requests really cost when they end (often much less), so the budget may have room again in moments.
 */
const IN_FLIGHT_RETRY_SECONDS = 2;

/** Whether the account refuses a request only for what requests in flight hold: without their holds it would cover it. */
function heldOnly(account: Account, needed: number, reserved: number): boolean {
  return reserved > 0 && account.usage.spend < account.budget && account.usage.spend + needed <= account.budget;
}

/** Until when (epoch ms) the account refuses the request: 0 when only the holds of requests in flight do, never: Infinity. */
function refusalLasts(account: Account, needed: number, reserved: number): number {
  if (heldOnly(account, needed, reserved)) return 0;
  return account.usage.period_resets_at ? Date.parse(account.usage.period_resets_at) : Infinity;
}

function budgetError(account: Account, needed: number, reserved: number, now: number): GatewayError {
  const left = Math.max(0, account.budget - account.usage.spend - reserved);
  // Without the holds of requests in flight the budget would cover it: a retry once they end may succeed.
  const held = heldOnly(account, needed, reserved);
  const headers = held ? inFlightHeaders() : exhaustedHeaders(account, now);
  return gatewayError('budget_exceeded', `The budget of ${account.kind} '${account.name}' ($${account.budget}) cannot cover this request: $${left.toFixed(6)} left` +
      (reserved > 0 ? ` after $${reserved.toFixed(6)} held by requests in flight` : '') +
      `, up to $${needed.toFixed(6)} needed.` +
      (held ? ' The money is held by requests in flight: retry when they end.' : '') +
      (!held && account.usage.period_resets_at ? ` The budget resets at ${account.usage.period_resets_at}.` : ''), { headers });
}

/** A refusal a retry soon may pass: the OpenAI and Anthropic SDKs retry a 429 after retry-after unless told not to. */
function inFlightHeaders(): Record<string, string> {
  return { 'x-should-retry': 'true', 'retry-after': String(IN_FLIGHT_RETRY_SECONDS) };
}

/**
 * A refusal no retry can pass before the budget resets. The OpenAI and Anthropic SDKs retry a 429 and sleep whatever
 * retry-after says (hours, until the budget resets): x-should-retry, which both obey, tells them a retry cannot
 * succeed sooner, so the client gets the error now.
 */
function exhaustedHeaders(account: Account, now: number): Record<string, string> {
  const headers: Record<string, string> = { 'x-should-retry': 'false' };
  if (account.usage.period_resets_at) {
    headers['retry-after'] = String(Math.max(1, Math.ceil((Date.parse(account.usage.period_resets_at) - now) / 1000)));
  }
  return headers;
}

/**
 * What a request costs, from reservation to settlement, in one stage: before the call it reserves the request's
 * upper-bound cost (prompt tokens counted with a tokenizer at the dearest input price the plan can reach, plus the
 * maximum output at the dearest output price) on the key's and the team's budgets; after it, however the request
 * ended (completed, failed, or cancelled mid-stream, then the tokens generated so far count), it charges the real
 * cost, commits the key's and team's spend before the answer ends, and only then releases the reservation, so no
 * concurrent request can slip into the gap. The reservation is this stage's own: nothing else holds or frees it.
 */
class SpendStage implements Stage {
  readonly name = 'spend';
  /** Requests already counted once (see settle). */
  private readonly counted = new WeakSet<RequestContext>();

  constructor(
    private readonly bus: EventBus,
    private readonly log: Log,
    private readonly governance: GovernanceStore,
    private readonly reservations: Reservations,
  ) {}

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    let output: number | Promise<number>;
    try {
      checkRequestNumbers(ctx);
      // Only a budget needs the bound (which may wait on the catalogue): other requests pass without it.
      output = this.hasBudget(ctx) ? reservedOutputTokens(ctx, targetsOf(ctx.plan?.groups ?? [])) : 0;
    } catch (err) {
      return throwError(() => err);
    }
    if (typeof output === 'number') return this.reserveAndCall(ctx, next, output);
    // The check and the reservation stay one synchronous step after the catalogue answered, so concurrent requests
    // cannot both pass a check made before either reserved.
    const bound = output;
    return defer(() => from(bound)).pipe(mergeMap((tokens) => this.reserveAndCall(ctx, next, tokens)));
  }

  /** Reserves for `outputTokens` of output, then runs the rest of the pipeline and settles what it cost. */
  private reserveAndCall(ctx: RequestContext, next: Next, outputTokens: number): Observable<ResponseEvent> {
    let release: () => void;
    try {
      release = this.reserve(ctx, outputTokens);
    } catch (err) {
      return throwError(() => err);
    }
    return new Observable<ResponseEvent>((subscriber) => {
      const text: Received = { answer: new ReceivedText(), reasoning: new ReceivedText() };
      let settled = false;
      const settle = (status: number, cancelled: boolean): Promise<void> => {
        if (settled) return Promise.resolve();
        settled = true;
        return this.settle(ctx, status, cancelled, text)
          .catch((err: unknown) => this.log.error({ err, requestId: ctx.id }, 'could not record the cost of a request'))
          .finally(release);
      };
      const inner = subscribeGuarded(next(), {
        next(event) {
          if (event.kind === 'chunk') chunkText(event.chunk, text);
          else if (event.kind === 'completion') completionText(event.completion, text);
          subscriber.next(event);
        },
        error(err: unknown) {
          const status = err instanceof GatewayError ? err.status : 500;
          void settle(status, false).then(() => subscriber.error(err));
        },
        complete() {
          void settle(200, false).then(() => subscriber.complete());
        },
      });
      return () => {
        inner.unsubscribe();
        // The client left before the end: charge what was generated so far. The runner waits for it before the
        // terminal event, so that event carries the cost.
        // Cut by the gateway (its shutdown) or by a failed write: the status the request ends with, not a 499.
        if (!settled) ctx.pending.push(settle(ctx.answerFailed?.status ?? 499, true));
      };
    });
  }

  /** Whether the request's payer has a budget, key's or team's, as stored now (reserve reads them again). */
  private hasBudget(ctx: RequestContext): boolean {
    const identity = this.payer(ctx);
    if (!identity) return false;
    const key = this.governance.getKeyRecord(identity.key.id) ?? identity.key;
    const team = identity.team ? (this.governance.getTeamRecord(identity.team.id) ?? identity.team) : null;
    return key.budget !== null || (team !== null && team.budget !== null);
  }

  /** Reserves the request's upper-bound cost (with `outputTokens` of output) on its key's and team's budgets; returns how to release it. */
  private reserve(ctx: RequestContext, outputTokens: number): () => void {
    const identity = this.payer(ctx);
    if (!identity) return noop;
    // The records as stored now, not as the auth stage read them: what was charged since (another request's spend
    // while this one waited on a guardrail's classifier, the cache's embedding, a plugin, or this request's own
    // earlier agent turns) counts, and so does a budget changed meanwhile.
    const key = this.liveKey(ctx, identity.key);
    const team = identity.team ? (this.governance.getTeamRecord(identity.team.id) ?? identity.team) : null;
    const accounts: Account[] = [];
    if (key.budget !== null) {
      accounts.push({ kind: 'key', id: key.id, name: key.name, budget: key.budget, usage: this.governance.currentUsage(key) });
    }
    if (team && team.budget !== null) {
      accounts.push({ kind: 'team', id: team.id, name: team.name, budget: team.budget, usage: this.governance.currentUsage(team) });
    }
    if (accounts.length === 0) return noop;

    const prices = worstPrices(ctx);
    const promptTokens = promptTokensOf(ctx) + mediaReserveTokens(ctx);
    const needed = (promptTokens * prices.input + outputTokens * prices.output) / 1_000_000 + prices.perRequest;
    // Checked numbers and validated prices keep `needed` finite and at least zero; should it ever not be,
    // nothing can cover it (a NaN would otherwise pass every comparison below).
    const first = accounts[0] as Account;
    if (!Number.isFinite(needed) || needed < 0) {
      this.bus.emit('budget.exceeded', { requestId: ctx.id, account: first.kind, id: first.id, budget: first.budget, spend: first.usage.spend, reserved: 0, needed });
      throw budgetError(first, Number.MAX_VALUE, 0, this.governance.nowMs());
    }
    let refusal: { account: Account; reserved: number } | null = null;
    for (const account of accounts) {
      const reserved = this.reservations.reserved(`${account.kind}:${account.id}`);
      // A spent budget refuses even requests that cost nothing, so "exhausted" means what it says.
      if (account.usage.spend + reserved + needed > account.budget || account.usage.spend >= account.budget) {
        // Of the budgets that refuse, the one that lets a retry pass last: a budget that cannot cover the request even
        // without the holds (the team's, while the key is short only for its requests in flight) before one short only
        // for them, and of two spent, the one that resets later (the team's month after the key's day).
        if (!refusal || refusalLasts(account, needed, reserved) > refusalLasts(refusal.account, needed, refusal.reserved)) refusal = { account, reserved };
      }
    }
    if (refusal) {
      const { account, reserved } = refusal;
      this.bus.emit('budget.exceeded', { requestId: ctx.id, account: account.kind, id: account.id, budget: account.budget, spend: account.usage.spend, reserved, needed });
      throw budgetError(account, needed, reserved, this.governance.nowMs());
    }
    return this.reservations.reserve(
      accounts.map((account) => `${account.kind}:${account.id}`),
      needed,
    );
  }

  /**
   * The paying key as stored now. A key revoked since auth let the request through (disabled, expired or deleted
   * while an agent run's tool ran, or a guardrail's classifier answered) pays for no further call, as it would pay for
   * no new request: its 401 ends the request.
   */
  private liveKey(ctx: RequestContext, authed: VirtualKeyRecord): VirtualKeyRecord {
    const key = this.governance.getKeyRecord(authed.id);
    const refusal = key ? deadKey(this.governance, key) : { reason: 'unknown_key' as const, error: deletedKey(authed) };
    if (!refusal) return key as VirtualKeyRecord;
    this.bus.emit('auth.rejected', { requestId: ctx.id, reason: refusal.reason, keyId: authed.id });
    throw refusal.error;
  }

  /**
   * Whose budgets the request spends: its own key's and team's, or, for an internal call made for a client's request
   * (a guardrail's classifier), that request's (see CHARGE_TO).
   */
  private payer(ctx: RequestContext): Identity | null {
    if (ctx.identity) return ctx.identity;
    const chargeTo = ctx.extensions.get(CHARGE_TO);
    const key = chargeTo ? this.governance.getKeyRecord(chargeTo.keyId) : undefined;
    if (!chargeTo || !key) return null;
    return { key, team: chargeTo.teamId ? (this.governance.getTeamRecord(chargeTo.teamId) ?? null) : null };
  }

  /** Charges what the request used, commits the spend, and tells the bus. Leaves the charge on `ctx.spent`. */
  private async settle(ctx: RequestContext, status: number, cancelled: boolean, text: Received): Promise<void> {
    const upstream = ctx.upstream;
    const provider = upstream ? ctx.config.providers.get(upstream.provider) : undefined;
    // Tokens: the upstream's own count when it sent one; otherwise what it had counted before its stream was cut,
    // and counted here what it had not.
    let tokens: TokenUsage;
    let estimated = false;
    if (ctx.usage) {
      const checked = plausibleUsage(ctx, ctx.usage, text.answer);
      tokens = checked.tokens;
      if (checked.implausible) this.flagUsage(ctx, ctx.usage, tokens, checked.implausible);
    } else if (upstream && upstream.status > 0 && upstream.status < 400) {
      ({ tokens, estimated } = this.tokensWithoutUsage(ctx, text));
    } else tokens = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 };

    const cost = provider && upstream ? costOf(provider, upstream.upstreamModel, tokens, ctx.plan?.price ?? null) : { usd: 0, priced: true, source: 'none' as const };
    if (provider && upstream && !cost.priced && tokens.input_tokens + tokens.output_tokens > 0) {
      this.bus.emit('cost.unpriced', { requestId: ctx.id, provider: provider.name, model: upstream.upstreamModel });
    }
    const spent: Spent = { usage: tokens, usd: cost.usd, priced: cost.priced, estimated };
    ctx.spent = spent;

    const identity = this.payer(ctx);
    if (identity) {
      // Spend is committed before the answer ends, so the next request of this key sees it. The lines a charge
      // crosses are judged on the spend before and after it as committed (requests that overlap each cross their own).
      // One client request is one request however many upstream turns it took (an MCP agent's): its later turns
      // and the calls made for it (a classifier's) add their cost only.
      const countsRequest = identity === ctx.identity && !this.counted.has(ctx);
      if (countsRequest) this.counted.add(ctx);
      const charged = await this.governance.recordSpend(identity.key.id, identity.team?.id ?? null, cost.usd, countsRequest);
      if (charged.key?.budget) this.thresholds('key', identity.key.id, charged.key.budget, charged.key.before, charged.key.after);
      if (identity.team && charged.team?.budget) this.thresholds('team', identity.team.id, charged.team.budget, charged.team.before, charged.team.after);
    }
    this.bus.emit('cost.recorded', {
      requestId: ctx.id,
      keyId: identity?.key.id ?? null,
      teamId: identity?.team?.id ?? null,
      model: ctx.request.model,
      provider: upstream?.provider ?? null,
      usd: cost.usd,
      priced: cost.priced,
      promptTokens: tokens.input_tokens,
      completionTokens: tokens.output_tokens,
      estimated,
      status,
      cancelled,
    });
  }

  /**
   * The tokens of an answer whose upstream sent no final usage (a stream the client left, or that broke off, or a
   * server that reports none). What the upstream had counted before (`ctx.usageSoFar`: Anthropic's message_start
   * counts the prompt with its cache reads and writes, Gemini's events carry running totals) is charged as reported,
   * within reason (plausibleUsage); the gateway counts what it had not: the prompt when none was reported, and the
   * output from the text the client received, reasoning included (a stream cut during a model's thinking had
   * generated all of it), when that is more than the upstream's count so far. Reasoning the upstream counted apart
   * (Gemini's thoughts) is taken at the larger of its count and the text's, never both.
   */
  private tokensWithoutUsage(ctx: RequestContext, text: Received): { tokens: TokenUsage; estimated: boolean } {
    // One count for all, so they share one time budget (see tokens/tokenizer.ts).
    const counter = new TokenCounter();
    const answer = text.answer.tokens(counter);
    const reasoningText = text.reasoning.tokens(counter);
    const reported = ctx.usageSoFar;
    if (!reported) {
      const tokens: TokenUsage = { input_tokens: promptTokensOf(ctx, counter), output_tokens: answer + reasoningText, cache_read_tokens: 0, cache_write_tokens: 0 };
      if (reasoningText > 0) tokens.output_reasoning_tokens = reasoningText;
      return { tokens, estimated: true };
    }
    const checked = plausibleUsage(ctx, reported, text.answer);
    const tokens = checked.tokens;
    if (checked.implausible) this.flagUsage(ctx, reported, tokens, checked.implausible);
    let estimated = false;
    if (tokens.input_tokens === 0) {
      // No prompt count came, so no part of it either (plausibleUsage keeps the parts within the total).
      tokens.input_tokens = promptTokensOf(ctx, counter);
      estimated = true;
    }
    const reasoning = Math.max(tokens.output_reasoning_tokens ?? 0, reasoningText);
    if (answer + reasoning > tokens.output_tokens) {
      tokens.output_tokens = answer + reasoning;
      if (reasoning > 0) tokens.output_reasoning_tokens = reasoning;
      estimated = true;
    }
    return { tokens, estimated };
  }

  /** Says that an upstream's usage was not charged as reported: a warning in the log and a `usage.implausible` event. */
  private flagUsage(ctx: RequestContext, reported: CompletionUsage, charged: TokenUsage, reason: string): void {
    const provider = ctx.upstream?.provider ?? null;
    const model = ctx.upstream?.upstreamModel ?? ctx.request.model;
    const shown = (value: unknown): number | null => (typeof value === 'number' ? value : null);
    const event = {
      requestId: ctx.id,
      provider,
      model,
      reason,
      reported: { promptTokens: shown(reported.prompt_tokens), completionTokens: shown(reported.completion_tokens) },
      charged: { promptTokens: charged.input_tokens, completionTokens: charged.output_tokens },
    };
    this.log.warn(event, 'implausible usage from the upstream: charged a plausible amount instead');
    this.bus.emit('usage.implausible', event);
  }

  private thresholds(account: 'key' | 'team', id: string, budget: number, before: number, after: number): void {
    for (const threshold of thresholdsCrossed({ spend: before, budget }, { spend: after, budget })) {
      this.bus.emit('budget.threshold', { account, id, threshold, budget, spend: after });
    }
  }
}

function noop(): void {}

export default definePlugin({
  name: 'spend',
  requires: [BUS, LOG, GOVERNANCE, RESERVATIONS],
  create: (_options, _config, services) => new SpendStage(services.get(BUS), services.get(LOG), services.get(GOVERNANCE), services.get(RESERVATIONS)),
});
