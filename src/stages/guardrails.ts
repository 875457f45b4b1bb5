import { defer, from, Observable, switchMap, type OperatorFunction } from 'rxjs';
import type { EventBus } from '../bus/bus.js';
import type { ChatCompletionChunk, ResponseEvent } from '../core/canonical.js';
import type { GuardrailRuleConfig, GuardrailsOverride, RuntimeConfig } from '../core/config.js';
import type { RequestContext } from '../core/context.js';
import { gatewayError } from '../core/errors.js';
import { GUARDRAIL_ACTIONS, INTERNAL_CALL } from '../core/guardrail-keys.js';
import { definePlugin } from '../core/plugin.js';
import type { Next, Stage } from '../core/stage.js';
import { libraryRules } from '../config/runtime.js';
import { guardStream } from '../guardrails/answer-guard.js';
import { ACTION_PAST, foundWords } from '../guardrails/finding-words.js';
import { requestedSchema, schemaProblem } from '../guardrails/json-output.js';
import { moderate, verdictBlocks, type Classify, type ModerationRule, type ModerationVerdict } from '../guardrails/moderation.js';
import { guardNativeBody, guardRequest, hasNativeOnlyText, redactNativeBody, requestTexts, scrubNativeBody, type TextScanner } from '../guardrails/request-guard.js';
import { compileGuardrails, type Scanner } from '../guardrails/scanner.js';
import { effectiveRules } from '../guardrails/effective-rules.js';
import { createStreamGuard } from '../guardrails/stream-guard.js';
import { moderatedText } from '../guardrails/moderated-text.js';
import { contentFilteredResponse } from '../guardrails/responses-answer-guard.js';
import { contentFilteredEvents } from '../guardrails/responses-event-guard.js';
import { RESPONSES_FORMAT } from '../wire/openai-responses/format.js';
import { COMPLETIONS_FORMAT } from '../wire/openai-completions/format.js';
import type { Finding } from '../guardrails/types.js';
import type { Log } from '../log.js';
import { BUS, IN_PROCESS, LOG, type InProcessCalls } from '../services.js';
import { isRecord } from '../core/is-record.js';

/** A rule's finding as the stage reports it: the library's findings, and the stage's own (moderation, json_schema). */
interface Acted {
  rule: string;
  kind: string;
  action: 'block' | 'redact' | 'flag';
  subtype?: string | undefined;
}

/** The rules one request is checked with, compiled (once per distinct set of overrides and config version). */
interface Policy {
  scanner: Scanner | null;
  inputText: TextScanner | null;
  outputText: TextScanner | null;
  moderationIn: ModerationRule[];
  moderationOut: ModerationRule[];
  jsonSchema: { name: string; action: 'block' | 'flag' } | null;
  outputBlock: 'content_filter' | 'error';
  lookBehind: number | undefined;
}

/** Distinct override combinations kept compiled per config version; past it the map starts over. */
const MAX_POLICIES = 1_000;

function appliesTo(rule: GuardrailRuleConfig, side: 'input' | 'output', defaultSide: 'input' | 'both'): boolean {
  const to = rule.applies_to ?? defaultSide;
  return to === 'both' || to === side;
}

function compilePolicy(config: RuntimeConfig, layers: ReadonlyArray<GuardrailsOverride | null>): Policy | null {
  const { rules, outputBlock } = effectiveRules(config.guardrails.rules, layers);
  if (rules.length === 0) return null;
  const library = libraryRules(rules);
  // The rules were checked when written (the config's at load, a key's or team's through the admin API).
  const scanner = library.length > 0 ? compileGuardrails(library, { stored: true }) : null;
  const text = (side: 'input' | 'output'): TextScanner | null =>
    scanner?.appliesTo(side) ? { scan: (value) => scanner.scan(value, side), redact: (value, findings) => scanner.redact(value, findings) } : null;
  const moderation = rules.filter((rule) => rule.kind === 'moderation') as unknown as ModerationRule[];
  const json = rules.find((rule) => rule.kind === 'json_schema');
  return {
    scanner,
    inputText: text('input'),
    outputText: text('output'),
    moderationIn: moderation.filter((rule) => appliesTo(rule as unknown as GuardrailRuleConfig, 'input', 'input')),
    moderationOut: moderation.filter((rule) => appliesTo(rule as unknown as GuardrailRuleConfig, 'output', 'input')),
    jsonSchema: json ? { name: json.name, action: json.action === 'block' ? 'block' : 'flag' } : null,
    outputBlock: outputBlock ?? config.guardrails.outputBlock,
    lookBehind: config.guardrails.lookBehind ?? undefined,
  };
}


/**
 * The texts of a request a moderation model judges: what the input rules read (see requestTexts), one line per
 * message (`role: text`, its texts joined), or per embeddings input.
 */
function requestText(ctx: RequestContext): string {
  const texts = requestTexts(ctx.request, ctx.operation);
  if (ctx.operation === 'embeddings') return texts.map(({ text }) => text).join('\n');
  const messages = ctx.request.messages;
  const lines: string[] = [];
  let current = -1;
  for (const { at, text } of texts) {
    if (at === current) lines[lines.length - 1] += ` ${text}`;
    else {
      current = at;
      lines.push(`${messages[at]?.role ?? 'user'}: ${text}`);
    }
  }
  return lines.join('\n');
}

/**
 * Guardrails: the request's texts are checked before anything is routed, cached or charged (a block is a 400
 * `guardrail_blocked`; redactions change what goes upstream), and the answer on its way back: whole, or chunk by
 * chunk with a bounded look-behind, so a match split across chunks is caught before any of it reaches the client.
 * A blocked answer ends with `finish_reason: content_filter` (or an error, by setting); a blocked stream still ends
 * cleanly. Placed outside the cache, so an answer served from the cache is checked like a fresh one.
 */
class GuardrailsStage implements Stage {
  readonly name = 'guardrails';
  private readonly policies = new Map<string, Policy | null>();
  private readonly routeIds = new WeakMap<object, number>();
  private nextRouteId = 1;
  /** The request `appliesTo` last looked at, and the policy it found (its run follows with the same request). */
  private asked: RequestContext | null = null;
  private askedPolicy: Policy | null = null;

  constructor(
    private readonly config: RuntimeConfig,
    private readonly bus: EventBus,
    private readonly log: Log,
    private readonly calls: InProcessCalls,
  ) {
  }

  /** The classifier for one request's moderation, its cost charged to the request's key and team. */
  private classifyFor(ctx: RequestContext): Classify {
    const chargeTo = ctx.identity ? { keyId: ctx.identity.key.id, teamId: ctx.identity.team?.id ?? null } : null;
    return (request, signal) => this.calls.chat(request, { purpose: 'guardrail-moderation', signal, chargeTo });
  }

  /** Whether a rule applies to the request; the policy found is kept for its run, which follows at once. */
  appliesTo(ctx: RequestContext): boolean {
    // The gateway's own calls (a moderation request) are not checked again: the classifier must see the text.
    const policy = ctx.extensions.has(INTERNAL_CALL) ? null : this.policyFor(ctx);
    this.asked = ctx;
    this.askedPolicy = policy;
    return policy !== null;
  }

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    if (ctx.extensions.has(INTERNAL_CALL)) return next();
    const policy = this.asked === ctx ? this.askedPolicy : this.policyFor(ctx);
    this.asked = null;
    this.askedPolicy = null;
    if (!policy) return next();
    return defer(() => {
      this.checkInput(ctx, policy);
      const answer = (): Observable<ResponseEvent> => this.guardOutput(ctx, policy, next);
      if (policy.moderationIn.length === 0) return answer();
      return from(this.moderateInput(ctx, policy)).pipe(switchMap(answer));
    });
  }

  /** The compiled policy of this request's route, team and key (null: no rule applies, the stage costs nothing more). */
  private policyFor(ctx: RequestContext): Policy | null {
    const route = ctx.plan?.route ? (ctx.config.routes.get(ctx.plan.route)?.guardrails ?? null) : null;
    const team = ctx.identity?.team?.guardrails ?? null;
    const key = ctx.identity?.key.guardrails ?? null;
    if (!route && !team && !key) return this.cached('', () => compilePolicy(this.config, []));
    // Key and team records are read afresh per request, so their overrides are known by content; routes by identity.
    const id = `${route ? this.routeId(route) : 0}|${team ? JSON.stringify(team) : ''}|${key ? JSON.stringify(key) : ''}`;
    return this.cached(id, () => compilePolicy(this.config, [route, team, key]));
  }

  private cached(id: string, compile: () => Policy | null): Policy | null {
    const found = this.policies.get(id);
    if (found !== undefined) return found;
    if (this.policies.size >= MAX_POLICIES) this.policies.clear();
    const policy = compile();
    this.policies.set(id, policy);
    return policy;
  }

  private routeId(route: object): number {
    let id = this.routeIds.get(route);
    if (id === undefined) {
      id = this.nextRouteId++;
      this.routeIds.set(route, id);
    }
    return id;
  }

  // ---- input ----------------------------------------------------------------------------------------

  private checkInput(ctx: RequestContext, policy: Policy): void {
    const scanner = policy.inputText;
    if (!scanner) return;
    const verdict = guardRequest(ctx.request, ctx.operation, scanner);
    const native = ctx.native;
    // A body whose canonical form left parts out goes upstream with them (native pass-through): it is checked whole,
    // and its findings (a superset of the canonical ones) are the ones reported. So is one holding text the model
    // reads that the canonical form has no place for (an Anthropic document's title and context).
    const whole = native && (native.untranslatable || hasNativeOnlyText(native.body, native.format)) ? guardNativeBody(native.body, scanner, native.format) : null;
    const findings = whole ? whole.findings : verdict.findings;
    if (findings.length > 0) this.report(ctx, 'input', findings);
    // A refused request goes nowhere, but the request log may keep its body: the client's own one is scrubbed too.
    if (native && (verdict.blocked || whole?.blocked)) (ctx as { native: typeof native }).native = { ...native, body: scrubNativeBody(native.body, scanner, native.format) };
    if (verdict.blocked) throw blockedError(verdict.blocked.finding, 'input', inputParam(ctx, verdict.blocked.param));
    if (whole?.blocked) throw blockedError(whole.blocked, 'input', inputParam(ctx, native?.format === 'gemini' ? 'contents' : 'messages'));
    // The client's own body goes upstream as it is: it gets the same redactions.
    if (native && whole) (ctx as { native: typeof native }).native = { ...native, body: whole.body };
    else if (native && verdict.changed) (ctx as { native: typeof native }).native = { ...native, body: redactNativeBody(native.body, scanner, native.format) };
  }

  private async moderateInput(ctx: RequestContext, policy: Policy): Promise<void> {
    const text = requestText(ctx);
    const classify = this.classifyFor(ctx);
    const verdicts = await Promise.all(policy.moderationIn.map(async (rule) => ({ rule, verdict: await moderate(rule, text, classify) })));
    for (const { rule, verdict } of verdicts) {
      if (!this.moderationActs(ctx, rule, verdict, 'input')) continue;
      if (rule.action === 'block') throw blockedError(moderationFinding(rule, verdict), 'input', inputParam(ctx, 'messages'));
    }
  }

  /** Reports a moderation verdict; true when it stops the text (under a block rule) or is flagged. */
  private moderationActs(ctx: RequestContext, rule: ModerationRule, verdict: ModerationVerdict, side: 'input' | 'output'): boolean {
    if (verdict.outcome === 'error') {
      this.log.warn({ requestId: ctx.id, rule: rule.name, reason: verdict.reason, onError: rule.on_error ?? 'allow' }, 'guardrails: the moderation check failed');
    }
    if (!verdictBlocks(rule, verdict)) return false;
    this.report(ctx, side, [moderationFinding(rule, verdict)]);
    return true;
  }

  // ---- output ---------------------------------------------------------------------------------------

  private guardOutput(ctx: RequestContext, policy: Policy, next: Next): Observable<ResponseEvent> {
    let answer = next();
    if (ctx.operation !== 'chat') return answer;
    const blockError = policy.outputBlock === 'error' ? (finding: Acted) => blockedError(finding, 'output', null) : null;
    const outputText = policy.outputText;
    const scanner = policy.scanner;
    if (outputText && scanner) {
      answer = guardStream(answer, {
        scanner: outputText,
        newStreamGuard: () => createStreamGuard(scanner, { direction: 'output', ...(policy.lookBehind ? { lookBehind: policy.lookBehind } : {}) }),
        report: (findings) => this.report(ctx, 'output', findings),
        blockError,
      });
    }
    const schema = policy.jsonSchema ? requestedSchema(ctx.request.response_format) : null;
    if (policy.jsonSchema && schema) answer = answer.pipe(this.checkJson(ctx, policy.jsonSchema, schema, blockError));
    if (policy.moderationOut.length > 0) answer = answer.pipe(this.moderateOutput(ctx, policy, blockError));
    return answer;
  }

  /**
   * JSON validity against the schema `response_format` asked for: a whole answer is withheld when invalid (block);
   * a stream is judged when its choice finishes, when its text has been sent, so a block there changes the finish
   * reason to `content_filter` (the client is told the JSON is not to be trusted).
   */
  private checkJson(ctx: RequestContext, rule: { name: string; action: 'block' | 'flag' }, schema: Record<string, unknown>, blockError: ((finding: Acted) => Error) | null): OperatorFunction<ResponseEvent, ResponseEvent> {
    const finding: Acted = { rule: rule.name, kind: 'json_schema', action: rule.action };
    return (source) =>
      defer(() => {
        const texts = new Map<number, string>();
        /** A choice was blocked: a passed-through Responses stream's end is made a content filter's. */
        let filtered = false;
        return new Observable<ResponseEvent>((subscriber) =>
          source.subscribe({
            next: (event) => {
              try {
                if (event.kind === 'completion') {
                  let withheld = false;
                  const choices = event.completion.choices.map((choice) => {
                    if (!isRecord(choice) || !isRecord(choice.message) || typeof choice.message.content !== 'string' || choice.finish_reason === 'content_filter') return choice;
                    if (schemaProblem(schema, choice.message.content) === null) return choice;
                    this.report(ctx, 'output', [finding]);
                    if (rule.action === 'flag') return choice;
                    if (blockError) throw blockError(finding);
                    withheld = true;
                    return { ...choice, message: { ...choice.message, content: '' }, finish_reason: 'content_filter' };
                  });
                  // Valid (or only flagged): the answer goes on as it came, the upstream's own form with it.
                  if (!withheld) return subscriber.next(event);
                  const responses = event.native?.format === RESPONSES_FORMAT && event.native.body ? event.native.body : null;
                  const native = responses ? { native: { format: RESPONSES_FORMAT, body: contentFilteredResponse(responses) } } : {};
                  subscriber.next({ kind: 'completion', completion: { ...event.completion, choices }, ...native });
                  return;
                }
                if (event.kind !== 'chunk') return subscriber.next(event);
                let changed = false;
                const choices = event.chunk.choices.map((choice) => {
                  if (!isRecord(choice)) return choice;
                  const index = typeof choice.index === 'number' ? choice.index : 0;
                  const delta = isRecord(choice.delta) ? choice.delta : {};
                  if (typeof delta.content === 'string') texts.set(index, (texts.get(index) ?? '') + delta.content);
                  if (choice.finish_reason === null || choice.finish_reason === undefined || choice.finish_reason === 'content_filter') return choice;
                  const problem = schemaProblem(schema, texts.get(index) ?? '');
                  texts.delete(index);
                  if (problem === null) return choice;
                  this.report(ctx, 'output', [finding]);
                  if (rule.action === 'flag') return choice;
                  if (blockError) throw blockError(finding);
                  changed = true;
                  return { ...choice, finish_reason: 'content_filter' };
                });
                // A blocking rule may change a choice's last chunk after the rest went out, and an upstream's own
                // events (native pass-through) cannot carry that change: every chunk goes without them, so the
                // dialect writes the whole answer from the chunks, the change included.
                // A Responses stream passed through can say it in its own terms: its end becomes a content filter's.
                const responses = event.native?.format === RESPONSES_FORMAT && event.native.events ? event.native.events : null;
                filtered ||= changed;
                if (responses) subscriber.next(filtered ? { kind: 'chunk', chunk: changed ? { ...event.chunk, choices } : event.chunk, native: { format: RESPONSES_FORMAT, events: contentFilteredEvents(responses) } } : event);
                else if (changed) subscriber.next({ kind: 'chunk', chunk: { ...event.chunk, choices } });
                else subscriber.next(rule.action === 'block' && event.native ? { kind: 'chunk', chunk: event.chunk } : event);
              } catch (err) {
                subscriber.error(err);
              }
            },
            error: (err: unknown) => subscriber.error(err),
            complete: () => subscriber.complete(),
          }),
        );
      });
  }

  /**
   * Output moderation: a model judges the whole answer, so a stream is held until it ends and is checked (its
   * chunks then go out together); a blocked answer is withheld with `content_filter`, or fails by setting.
   */
  private moderateOutput(ctx: RequestContext, policy: Policy, blockError: ((finding: Acted) => Error) | null): OperatorFunction<ResponseEvent, ResponseEvent> {
    return (source) =>
      defer(() => {
        const held: ResponseEvent[] = [];
        return new Observable<ResponseEvent>((subscriber) => {
          let cancelled = false;
          const subscription = source.subscribe({
            next: (event) => held.push(event),
            error: (err: unknown) => subscriber.error(err),
            complete: () => {
              void this.judgeHeld(ctx, policy, held).then(
                (block) => {
                  if (cancelled) return;
                  if (block && blockError) return subscriber.error(blockError(block));
                  for (const event of block ? withheld(held) : held) subscriber.next(event);
                  subscriber.complete();
                },
                (err: unknown) => subscriber.error(err),
              );
            },
          });
          return () => {
            cancelled = true;
            subscription.unsubscribe();
          };
        });
      });
  }

  /** The first moderation block over the held answer, or null; flags are reported on the way. */
  private async judgeHeld(ctx: RequestContext, policy: Policy, held: readonly ResponseEvent[]): Promise<Acted | null> {
    const text = moderatedText(held);
    if (!text) return null;
    const classify = this.classifyFor(ctx);
    for (const rule of policy.moderationOut) {
      const verdict = await moderate(rule, text, classify);
      if (this.moderationActs(ctx, rule, verdict, 'output') && rule.action === 'block') return moderationFinding(rule, verdict);
    }
    return null;
  }

  // ---- reporting ------------------------------------------------------------------------------------

  /** Events (one per rule and action), the log's `guardrails` field; never the matched text. */
  private report(ctx: RequestContext, side: 'input' | 'output', findings: readonly Acted[]): void {
    const counts = new Map<string, { finding: Acted; count: number }>();
    for (const finding of findings) {
      const id = `${finding.rule}\u0000${finding.action}`;
      const entry = counts.get(id);
      if (entry) entry.count++;
      else counts.set(id, { finding, count: 1 });
    }
    let actions = ctx.extensions.get(GUARDRAIL_ACTIONS);
    if (!actions) {
      actions = [];
      ctx.extensions.set(GUARDRAIL_ACTIONS, actions);
    }
    for (const { finding, count } of counts.values()) {
      const past = ACTION_PAST[finding.action];
      this.bus.emit(`guardrail.${past}`, { requestId: ctx.id, rule: finding.rule, kind: finding.kind, side, count, keyId: ctx.identity?.key.id ?? null, route: ctx.plan?.route ?? null });
      const label = `${side}:${finding.rule}:${past}`;
      if (!actions.includes(label) && actions.length < 50) actions.push(label);
    }
  }
}

function moderationFinding(rule: ModerationRule, verdict: ModerationVerdict): Acted {
  return { rule: rule.name, kind: 'moderation', action: rule.action, subtype: verdict.outcome === 'unsafe' ? (verdict.category ?? undefined) : 'check_failed' };
}

/** The 400 of a blocked request (or, with `output_block: error`, answer): names the rule and what it found, never the text. */
/**
 * Where a blocked input is, as the client's format names it: a Responses API request has no `messages` (its
 * `instructions` and `input` items become them, not one for one), so it is told `input`.
 */
function inputParam(ctx: RequestContext, param: string | null): string | null {
  // A legacy completion's text is its prompt (and suffix): the canonical message the stages read is the client's prompt.
  if (ctx.native?.format === COMPLETIONS_FORMAT && param !== null) return 'prompt';
  return ctx.dialect === 'openai-responses' && param !== null ? 'input' : param;
}

function blockedError(finding: Acted | Finding, side: 'input' | 'output', param: string | null) {
  const what = foundWords(finding.kind);
  const detail = finding.kind === 'moderation' && finding.subtype ? (finding.subtype === 'check_failed' ? ' (the check failed and the rule fails closed)' : ` (${finding.subtype})`) : '';
  const message = side === 'input' ? `Blocked by guardrail '${finding.rule}': the request contains ${what}${detail}.` : `Blocked by guardrail '${finding.rule}': the answer contains ${what}${detail}.`;
  return gatewayError('guardrail_blocked', message, { param });
}

/** A held answer with its text withheld: one closing chunk per choice with `content_filter`, usage kept. */
function withheld(held: readonly ResponseEvent[]): ResponseEvent[] {
  const out: ResponseEvent[] = [];
  const first = held.find((event): event is Extract<ResponseEvent, { kind: 'chunk' }> => event.kind === 'chunk');
  for (const event of held) {
    if (event.kind === 'completion') {
      const choices = event.completion.choices.map((choice) => {
        if (!isRecord(choice) || !isRecord(choice.message)) return choice;
        // Nothing the model wrote stays, as when an output rule blocks: its calls (a legacy function call is one), its
        // reasoning in any of its forms, a spoken answer's audio, and the logprobs that spell its text.
        const { tool_calls: _withheld, function_call: _called, audio: _spoken, reasoning_content: _reasoning, reasoning: _reasoned, reasoning_details: _details, thinking_blocks: _thinking, ...message } = choice.message;
        const spelled = choice.logprobs === undefined || choice.logprobs === null ? {} : { logprobs: null };
        return { ...choice, message: { ...message, content: '' }, ...spelled, finish_reason: 'content_filter' };
      });
      // A Responses answer passed through keeps its own Response (its id, reasoning), its text and calls withheld.
      const body = event.native?.format === RESPONSES_FORMAT ? event.native.body : undefined;
      const native = body ? { native: { format: RESPONSES_FORMAT, body: contentFilteredResponse(body, ['message', 'function_call', 'custom_tool_call']) } } : {};
      out.push({ kind: 'completion', completion: { ...event.completion, choices }, ...native });
    }
  }
  if (first) {
    const indexes = new Set<number>();
    for (const event of held) {
      if (event.kind !== 'chunk') continue;
      for (const choice of event.chunk.choices) if (isRecord(choice)) indexes.add(typeof choice.index === 'number' ? choice.index : 0);
    }
    const chunk: ChatCompletionChunk = {
      ...first.chunk,
      choices: [...indexes].map((index) => ({ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: 'content_filter' })),
      ...('usage' in first.chunk ? { usage: null } : {}),
    };
    out.push({ kind: 'chunk', chunk });
    for (const event of held) if (event.kind === 'chunk' && event.chunk.choices.length === 0) out.push({ kind: 'chunk', chunk: event.chunk });
  }
  return out;
}

export default definePlugin({
  name: 'guardrails',
  requires: [BUS, LOG, IN_PROCESS],
  create: (_options, config, services) => new GuardrailsStage(config, services.get(BUS), services.get(LOG), services.get(IN_PROCESS)),
});
