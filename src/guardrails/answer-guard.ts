import { Observable } from 'rxjs';
import type { ChatCompletion, ChatCompletionChunk, NativeStreamEvent, ResponseEvent } from '../core/canonical.js';
import type { TextScanner } from './request-guard.js';
import type { Finding } from './types.js';
import { isRecord } from '../core/is-record.js';
import { AnthropicEventGuard } from './anthropic-event-guard.js';
import { blockedAudio, setAudio, transcriptOf, withTranscript } from './audio-transcript.js';
import { detailKey, detailText, isSigned, withDetailText } from './reasoning-details.js';
import { GeminiEventGuard } from './gemini-event-guard.js';
import { HeldNativeEvents } from './held-native-events.js';
import { guardNativeParts } from './native-answer-parts.js';
import { guardResponseBody } from './responses-answer-guard.js';
import { ResponsesEventGuard } from './responses-event-guard.js';

import type { StreamStep, TextStreamGuard } from './text-stream-guard.js';

export type { StreamStep, TextStreamGuard } from './text-stream-guard.js';

export interface AnswerGuardOptions {
  scanner: TextScanner;
  newStreamGuard: () => TextStreamGuard;
  /** Every finding acted on (blocks, redactions, flags), as it happens. */
  report: (findings: readonly Finding[]) => void;
  /** A block ends the answer with `finish_reason: content_filter` (default), or fails it with this error. */
  blockError: ((finding: Finding) => Error) | null;
}

type Choice = Record<string, unknown>;


/**
 * The text fields of a message or delta the rules check, besides tool call arguments: the answer, the model's
 * reasoning (OpenAI-compatible `reasoning_content`, Anthropic's thinking, and `reasoning` as vLLM, OpenRouter and Groq
 * name it) and a refusal. Each is a text stream of its own.
 */
const TEXT_FIELDS = ['content', 'reasoning_content', 'reasoning', 'refusal'] as const;
type TextField = (typeof TEXT_FIELDS)[number];

/**
 * The text a field streams as (see ChoiceState.channel): the reasoning's two names are one, since vLLM sends the same
 * text under both in one delta, which must not read as the model moving on from one text to another.
 */
function channelOf(field: TextField): string {
  return field === 'reasoning' ? 'reasoning_content' : field;
}

/**
 * A whole answer checked: a block withholds that choice's text and tool calls (`content_filter`), redactions replace.
 * An answer nothing was found in is returned as it is (the same object), so its caller can keep the upstream's own
 * form of it (native pass-through: thinking signatures, grounding) instead of re-rendering what did not change.
 */
export function guardCompletion(completion: ChatCompletion, options: AnswerGuardOptions): ChatCompletion {
  const { scanner } = options;
  let changed = false;
  const choices = completion.choices.map((choice) => {
    if (!isRecord(choice) || !isRecord(choice.message)) return choice;
    const message = { ...choice.message };
    const found: Finding[] = [];
    let block: Finding | null = null;
    /**
     * One text of the answer scanned: its findings counted (not those of a copy of a text already counted) and the
     * first block kept; the text redacted when a rule redacts in it and nothing blocks, else null.
     */
    const redacted = (text: string, counted = true): string | null => {
      const findings = scanner.scan(text);
      if (counted) for (const finding of findings) found.push(finding);
      block ??= findings.find((finding) => finding.action === 'block') ?? null;
      return !block && findings.some((finding) => finding.action === 'redact') ? scanner.redact(text, findings) : null;
    };
    for (const field of TEXT_FIELDS) {
      const text = message[field];
      if (block || typeof text !== 'string') continue;
      const changedText = redacted(text);
      if (changedText !== null) message[field] = changedText;
    }
    // OpenRouter's copy of the reasoning (see reasoning-details.ts); its findings repeat the reasoning's when both came.
    let detailsChanged = false;
    if (!block && Array.isArray(message.reasoning_details)) {
      const copy = typeof message.reasoning === 'string' || typeof message.reasoning_content === 'string';
      const entries = message.reasoning_details.map((entry: unknown) => {
        const readable = detailText(entry);
        if (block || !readable) return entry;
        const changedText = redacted(readable.text, !copy);
        if (changedText === null) return entry;
        detailsChanged = true;
        return withDetailText(entry as Choice, readable.field, changedText, true);
      });
      if (detailsChanged) message.reasoning_details = entries;
    }
    if (!block && Array.isArray(message.tool_calls)) {
      message.tool_calls = message.tool_calls.map((call) => {
        const slot = block || !isRecord(call) ? null : callText(call);
        if (!slot) return call;
        const changedText = redacted(slot.text);
        return changedText === null ? call : withCallText(call as Choice, slot, changedText);
      });
    }
    // A legacy function call (the `functions` parameter) carries its arguments outside tool_calls.
    const legacy = message.function_call;
    if (!block && isRecord(legacy) && typeof legacy.arguments === 'string') {
      const changedText = redacted(legacy.arguments);
      if (changedText !== null) message.function_call = { ...legacy, arguments: changedText };
    }
    // A spoken answer's words (see audio-transcript.ts): its transcript is redacted, its audio data kept.
    const spoken = transcriptOf(message.audio);
    if (!block && spoken !== null) {
      const changedText = redacted(spoken);
      if (changedText !== null) message.audio = { ...(message.audio as Choice), transcript: changedText };
    }
    if (found.length > 0) options.report(block ? [block] : found);
    // Claude's signed thinking repeats the reasoning's text: withheld whole when a rule would change or block it there.
    if (!block && touchesThinking(message.thinking_blocks, scanner)) {
      delete message.thinking_blocks;
      changed = true;
      if (!found.some((finding) => finding.action === 'redact')) return { ...choice, message };
    }
    if (!block) {
      // Only a redaction changes the answer; a finding that is only flagged leaves it as it came.
      if (!found.some((finding) => finding.action === 'redact') && !detailsChanged) return choice;
      changed = true;
      // The logprobs' tokens spell the text as the model wrote it, the redacted span included: they go too.
      return { ...choice, message, ...withoutLogprobs(choice) };
    }
    if (options.blockError) throw options.blockError(block);
    changed = true;
    return withheldChoice(choice, message);
  });
  return changed ? { ...completion, choices } : completion;
}

/** A choice a rule blocked: its text withheld, its calls, reasoning, audio and logprobs dropped, `content_filter`. */
function withheldChoice(choice: Choice, message: Choice): Choice {
  const { tool_calls: _withheld, function_call: _called, reasoning_content: _reasoning, reasoning: _reasoned, thinking_blocks: _thinking, audio: _spoken, reasoning_details: _details, ...rest } = message;
  return { ...choice, message: { ...rest, content: '' }, ...withoutLogprobs(choice), finish_reason: 'content_filter' };
}

/**
 * A whole answer the canonical rules left unchanged, passed through in the upstream's own form: the parts of that
 * form the canonical answer has no counterpart for are checked (see native-answer-parts.ts). A redaction there goes
 * out in the upstream's form; a block withholds the choice it is in, as a block in its text would.
 */
function guardNativeAnswer(event: Extract<ResponseEvent, { kind: 'completion' }>, format: string, body: Choice, options: AnswerGuardOptions): ResponseEvent {
  const verdict = guardNativeParts(format, body, options.scanner);
  if (!verdict) return event;
  const { blocked } = verdict;
  options.report(blocked ? [blocked.finding] : verdict.findings);
  if (blocked) {
    if (options.blockError) throw options.blockError(blocked.finding);
    const choices = event.completion.choices.map((choice) =>
      isRecord(choice) && isRecord(choice.message) && (typeof choice.index === 'number' ? choice.index : 0) === blocked.choice ? withheldChoice(choice, choice.message) : choice,
    );
    return { kind: 'completion', completion: { ...event.completion, choices } };
  }
  // Only flagged: the answer goes on as it came.
  if (verdict.body === body) return event;
  return { kind: 'completion', completion: event.completion, native: { format, body: verdict.body } };
}

/**
 * Whether a rule would redact or block the text of Claude's signed thinking blocks (`thinking_blocks`): a redacted
 * thinking cannot keep its signature, so the blocks are withheld rather than let the text the rule caught through.
 */
function touchesThinking(blocks: unknown, scanner: TextScanner): boolean {
  if (!Array.isArray(blocks)) return false;
  return blocks.some((block) => isRecord(block) && typeof block.thinking === 'string' && scanner.scan(block.thinking).some((finding) => finding.action !== 'flag'));
}

/** Where a tool call carries what the model wrote: a function's JSON `arguments`, a custom tool's free `input`. */
interface CallText {
  holder: 'function' | 'custom';
  field: 'arguments' | 'input';
  text: string;
}

/** A tool call's (or a tool call delta's) text, or null when it carries none. */
function callText(call: Choice): CallText | null {
  if (isRecord(call.function) && typeof call.function.arguments === 'string') return { holder: 'function', field: 'arguments', text: call.function.arguments };
  if (isRecord(call.custom) && typeof call.custom.input === 'string') return { holder: 'custom', field: 'input', text: call.custom.input };
  return null;
}

/** The call carrying `text` in place of its own. */
function withCallText(call: Choice, slot: CallText, text: string): Choice {
  return { ...call, [slot.holder]: { ...(call[slot.holder] as Choice), [slot.field]: text } };
}

/** The key of a legacy function call's guard among a choice's tool call guards, and its channel `tool:-1`. */
const LEGACY_CALL = -1;

/** Whether a tool call's arguments so far are a whole JSON value (the call is over when the next text begins). */
function wholeJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** `logprobs: null` for a choice that has them (their tokens would spell the text a rule changed); else nothing. */
function withoutLogprobs(choice: Choice): { logprobs?: null } {
  return choice.logprobs === undefined || choice.logprobs === null ? {} : { logprobs: null };
}

/** The guard of an upstream's own stream events (native pass-through), for the formats that have one. */
interface EventGuard {
  readonly format: string;
  pass(events: readonly NativeStreamEvent[]): NativeStreamEvent[];
  end(): NativeStreamEvent[];
}

function eventGuard(format: string, options: AnswerGuardOptions): EventGuard | null {
  if (format === 'anthropic') return new AnthropicEventGuard(options.newStreamGuard);
  if (format === 'gemini') return new GeminiEventGuard(options.newStreamGuard, (step) => reportStep(step, options));
  if (format === 'openai-responses') return new ResponsesEventGuard(options.newStreamGuard, (step) => reportStep(step, options));
  return null;
}

/** Reports what a guard found in a text only it sees; a block fails the answer when output_block says so. */
function reportStep(step: StreamStep, options: AnswerGuardOptions): void {
  if (step.blocked) {
    options.report([step.blocked]);
    if (options.blockError) throw options.blockError(step.blocked);
  } else if (step.findings.length > 0) options.report(step.findings);
}

/**
 * A whole Responses API answer passed through (OpenAI, Azure's v1 API): the upstream's own Response is guarded in
 * place (see guardResponseBody), so its reasoning, built-in tools' items and unknown fields are kept; the canonical
 * completion the stages and logs read gets the same rules. Unchanged, the event goes on as it came.
 */
function guardResponse(event: Extract<ResponseEvent, { kind: 'completion' }>, body: Record<string, unknown>, options: AnswerGuardOptions): ResponseEvent {
  const guarded = guardResponseBody(body, options.scanner);
  if (guarded.findings.length > 0) options.report(guarded.findings);
  if (guarded.blocked && options.blockError) throw options.blockError(guarded.blocked);
  if (guarded.body === body) return event;
  const completion = guardCompletion(event.completion, { ...options, report: () => {}, blockError: null });
  return { kind: 'completion', completion, native: { format: 'openai-responses', body: guarded.body } };
}

/** Per choice: its text fields' guards, its tool calls' guards (by tool call index), and whether a block ended it. */
interface ChoiceState {
  texts: Map<TextField, TextStreamGuard>;
  tools: Map<number, TextStreamGuard>;
  /** The guards of OpenRouter's reasoning_details texts, by entry (see reasoning-details.ts), and the entry each began with. */
  details: Map<string, OpenDetail>;
  /** The tool calls (by index) that are custom tools' (their text is `custom.input`, see callText). */
  custom: Set<number>;
  /** The guard of a spoken answer's transcript (`delta.audio.transcript`), once one came. */
  transcript: TextStreamGuard | null;
  ended: boolean;
  /** Characters of each text field pushed into its guard so far (stream offsets, as findings give them). */
  pushed: Map<TextField, number>;
  /** The spans of each text field that a rule redacted (never sent as the model wrote them). */
  changed: Map<TextField, Array<[number, number]>>;
  /** Chunks' logprobs held until the text they describe is released, oldest first (see releaseLogprobs). */
  logprobs: HeldLogprobs[];
  /** The text streaming now: a text field's name or `tool:<index>` (see guardChoice). */
  channel: string | null;
  /** The arguments the current tool call channel streamed since it began (see guardChoice), else ''. */
  channelArgs: string;
  /** Where each text field's current guard began, in the field's stream offsets (a field may begin again later). */
  bases: Map<TextField, number>;
}

/** One reasoning_details entry's text being guarded: the entry it began with, its text field, whether a rule changed it. */
interface OpenDetail {
  guard: TextStreamGuard;
  entry: Choice;
  field: 'text' | 'summary';
  redacted: boolean;
}

/** One chunk's logprobs, and the span of each text field that chunk carried. */
interface HeldLogprobs {
  logprobs: Record<string, unknown>;
  spans: Array<[TextField, number, number]>;
}

/**
 * The logprobs of the held chunks whose text is out (`all`: the choice's text has ended), merged into one value,
 * or null. A chunk's logprobs spell its text token by token, so they go out no sooner than that text (a match held
 * back would otherwise be sent in them), and not at all when a rule redacted any of it.
 */
function releaseLogprobs(current: ChoiceState, all: boolean): Record<string, unknown> | null {
  // The usual stream asked for no logprobs: nothing is held, and nothing is built per chunk.
  if (current.logprobs.length === 0) return null;
  const merged: Record<string, unknown[]> = {};
  while (current.logprobs.length > 0) {
    const held = current.logprobs[0] as HeldLogprobs;
    const out = all || held.spans.every(([field, , end]) => end <= (current.pushed.get(field) ?? 0) - (current.texts.get(field)?.held ?? 0));
    if (!out) break;
    current.logprobs.shift();
    const redacted = held.spans.some(([field, start, end]) => (current.changed.get(field) ?? []).some(([from, to]) => from < end && to > start));
    if (redacted) continue;
    for (const [name, value] of Object.entries(held.logprobs)) if (Array.isArray(value)) {
      const list = (merged[name] ??= []);
      for (const item of value as unknown[]) list.push(item);
    }
  }
  return Object.keys(merged).length === 0 ? null : { content: null, refusal: null, ...merged };
}

/**
 * A streamed answer checked as it flows: each choice's text and each tool call's arguments go through their own
 * stream guard, which holds back only a bounded tail (so a match split across chunks is seen whole before any of
 * it is sent). A block ends that choice with a final chunk carrying the safe text before it and
 * `finish_reason: content_filter`; later deltas of that choice are dropped, while the stream itself runs to its end
 * (usage chunk, `[DONE]`), so every SDK sees a clean finish. Chunks are rebuilt without `native`, so the client gets
 * the translation of what was checked; but an Anthropic, Gemini or OpenAI Responses stream passed through keeps its
 * own events, guarded in place (AnthropicEventGuard, GeminiEventGuard, ResponsesEventGuard), so its signatures,
 * grounding, encrypted reasoning and other fields are not lost to an output rule, and an OpenAI-format stream's
 * events whose text no rule changed go on as the upstream wrote them, each once its text is released
 * (HeldNativeEvents).
 */
export function guardStream(source: Observable<ResponseEvent>, options: AnswerGuardOptions): Observable<ResponseEvent> {
  return new Observable<ResponseEvent>((subscriber) => {
    const states = new Map<number, ChoiceState>();
    let last: ChatCompletionChunk | null = null;
    const state = (index: number): ChoiceState => {
      let found = states.get(index);
      if (!found) {
        found = { texts: new Map(), tools: new Map(), custom: new Set(), details: new Map(), transcript: null, ended: false, pushed: new Map(), changed: new Map(), logprobs: [], channel: null, channelArgs: '', bases: new Map() };
        states.set(index, found);
      }
      return found;
    };
    /** Applies one step; returns the block that ends the choice, if any. */
    const take = (step: StreamStep, redactedIn?: Array<[number, number]>, base = 0): Finding | null => {
      if (redactedIn) for (const finding of step.findings) if (finding.action === 'redact') redactedIn.push([base + finding.start, base + finding.end]);
      if (step.blocked) {
        options.report([step.blocked]);
        if (options.blockError) throw options.blockError(step.blocked);
        return step.blocked;
      }
      if (step.findings.length > 0) options.report(step.findings);
      return null;
    };

    /**
     * One choice of a chunk, guarded. When the model moves on from one text to the next (its reasoning to its answer,
     * its answer to a tool call, one tool call to the next), what the previous one holds goes out first: into
     * `before` (a choice for a chunk sent ahead of this one) when the move comes with this chunk's first text, else
     * into this delta ahead of the next text (a delta's texts are rendered in TEXT_FIELDS order, then tool calls).
     * Held until the finish instead, the answer's tail reached an Anthropic client after the tool call it preceded,
     * and the tool call's own held arguments after its block was closed (lost). A tool call whose arguments are not
     * yet whole JSON is not over (an upstream interleaving parallel calls): it keeps its guard, and what it holds.
     */
    const guardChoice = (choice: Choice, before: Choice[]): Choice | null => {
      const index = typeof choice.index === 'number' ? choice.index : 0;
      const current = state(index);
      if (current.ended) return null;
      const delta: Record<string, unknown> = isRecord(choice.delta) ? { ...choice.delta } : {};
      // The signed copy of a thinking block (its text was guarded as reasoning_content) is withheld when a rule acts on it.
      if (touchesThinking(delta.thinking_blocks, options.scanner)) delete delta.thinking_blocks;
      let blocked: Finding | null = null;
      let first = true;
      /** Makes `channel` the text streaming now, ending the previous one; false when that ended the choice. */
      const enter = (channel: string): boolean => {
        const previous = current.channel;
        const leading = first;
        first = false;
        if (previous === channel) return true;
        const unfinished = previous?.startsWith('tool:') === true && !wholeJson(current.channelArgs);
        current.channel = channel;
        current.channelArgs = '';
        if (previous === null || unfinished) return true;
        if (!leading) {
          blocked = endChannel(current, previous, delta);
          return blocked === null;
        }
        const ahead: Record<string, unknown> = {};
        const stop = endChannel(current, previous, ahead);
        if (stop === null) {
          if (Object.keys(ahead).length > 0) before.push({ index, delta: ahead, logprobs: null, finish_reason: null });
          return true;
        }
        current.ended = true;
        current.logprobs = [];
        before.push({ index, delta: { content: typeof ahead.content === 'string' ? ahead.content : '' }, logprobs: null, finish_reason: 'content_filter' });
        return false;
      };
      const spans: Array<[TextField, number, number]> = [];
      for (const field of TEXT_FIELDS) {
        const text = delta[field];
        if (typeof text !== 'string') continue;
        // Once the choice is blocked, no text of this delta goes out unchecked.
        if (blocked || current.ended || (text !== '' && !enter(channelOf(field)))) {
          delete delta[field];
          continue;
        }
        let guard = current.texts.get(field);
        const start = current.pushed.get(field) ?? 0;
        if (!guard) {
          current.texts.set(field, (guard = options.newStreamGuard()));
          current.bases.set(field, start);
        }
        current.pushed.set(field, start + text.length);
        spans.push([field, start, start + text.length]);
        const step = guard.push(text);
        delta[field] = step.release;
        blocked = take(step, changedSpans(current, field), current.bases.get(field));
      }
      // A block while ending the previous text, in the chunk sent ahead: that chunk ended the choice.
      if (current.ended) return null;
      if (delta.reasoning_details !== undefined) {
        if (blocked) delete delta.reasoning_details;
        else if (Array.isArray(delta.reasoning_details)) {
          const out: unknown[] = [];
          for (const entry of delta.reasoning_details as unknown[]) {
            if (!isRecord(entry)) {
              out.push(entry);
              continue;
            }
            const readable = detailText(entry);
            const key = detailKey(entry);
            // The reasoning's copy streams in the reasoning's turn (its channel).
            if (readable && readable.text !== '' && !enter('reasoning_content')) break;
            let open = current.details.get(key);
            if (readable && !open) current.details.set(key, (open = { guard: options.newStreamGuard(), entry, field: readable.field, redacted: false }));
            if (!open) {
              out.push(entry);
              continue;
            }
            const step = open.guard.push(readable?.text ?? '');
            let release = step.release;
            blocked = takeDetail(current, open, step);
            // A signature closes its entry's text: all of it is checked before the signature goes, or is withheld.
            if (!blocked && isSigned(entry)) {
              current.details.delete(key);
              const rest = open.guard.end();
              release += rest.release;
              blocked = takeDetail(current, open, rest);
            }
            if (release !== '' || (!blocked && isSigned(entry))) out.push(withDetailText(entry, open.field, release, blocked !== null || open.redacted));
            if (blocked) break;
          }
          if (current.ended) return null;
          if (out.length > 0) delta.reasoning_details = out;
          else delete delta.reasoning_details;
        }
      }
      // The chunk's logprobs wait for its text (they spell it); what is out by now goes with this chunk.
      if (isRecord(choice.logprobs)) current.logprobs.push({ logprobs: choice.logprobs, spans });
      if (!blocked && Array.isArray(delta.tool_calls)) {
        delta.tool_calls = delta.tool_calls.map((call) => {
          if (blocked || current.ended || !isRecord(call)) return call;
          const toolIndex = typeof call.index === 'number' ? call.index : 0;
          // A call's first delta opens its block at the client, arguments or not: the text before it goes first.
          const slot = enter(`tool:${toolIndex}`) ? callText(call) : null;
          if (!slot) return call;
          let guard = current.tools.get(toolIndex);
          if (!guard) {
            guard = options.newStreamGuard();
            current.tools.set(toolIndex, guard);
          }
          // A custom tool's input is free text, never whole JSON: its call stays open, and holds its tail, to the finish.
          if (slot.holder === 'custom') current.custom.add(toolIndex);
          else current.channelArgs += slot.text;
          const step = guard.push(slot.text);
          blocked = take(step);
          return withCallText(call, slot, step.release);
        });
        if (current.ended) return null;
      }
      // A legacy function call's arguments: a tool call's text of their own (see LEGACY_CALL).
      if (!blocked && isRecord(delta.function_call)) {
        const call = delta.function_call;
        if (enter(`tool:${LEGACY_CALL}`) && typeof call.arguments === 'string') {
          let guard = current.tools.get(LEGACY_CALL);
          if (!guard) current.tools.set(LEGACY_CALL, (guard = options.newStreamGuard()));
          current.channelArgs += call.arguments;
          const step = guard.push(call.arguments);
          blocked = take(step);
          delta.function_call = { ...call, arguments: step.release };
        }
        if (current.ended) return null;
      }
      // A spoken answer's transcript streams alongside its audio data, not in turn with the other texts (no channel).
      if (delta.audio !== undefined) {
        if (blocked) delete delta.audio;
        else if (isRecord(delta.audio) && transcriptOf(delta.audio) !== null) {
          const guard = (current.transcript ??= options.newStreamGuard());
          const step = guard.push(transcriptOf(delta.audio) as string);
          setAudio(delta, withTranscript(delta.audio, step.release));
          blocked = take(step);
        }
      }
      const finished = choice.finish_reason !== null && choice.finish_reason !== undefined;
      if (!blocked && finished) blocked = flushChoice(current, delta);
      if (blocked) {
        current.ended = true;
        current.logprobs = [];
        setAudio(delta, blockedAudio(delta.audio));
        delete delta.reasoning_details;
        delete delta.tool_calls;
        delete delta.function_call;
        delete delta.reasoning_content;
        delete delta.reasoning;
        return { ...choice, delta, ...withoutLogprobs(choice), finish_reason: 'content_filter' };
      }
      if (finished) current.ended = true;
      const logprobs = releaseLogprobs(current, finished);
      return logprobs !== null || choice.logprobs !== undefined ? { ...choice, delta, logprobs } : { ...choice, delta };
    };

    /** Where the redacted spans of a choice's text field are kept (see releaseLogprobs). */
    const changedSpans = (current: ChoiceState, field: TextField): Array<[number, number]> => {
      let spans = current.changed.get(field);
      if (!spans) current.changed.set(field, (spans = []));
      return spans;
    };

    /** Ends one text of a choice (see ChoiceState.channel), appending what it held to `delta`; the block, if any. */
    const endChannel = (current: ChoiceState, channel: string, delta: Record<string, unknown>): Finding | null => {
      if (channel.startsWith('tool:')) return endTool(current, Number(channel.slice(5)), delta);
      // The reasoning's channel is both its names (see channelOf).
      if (channel === 'reasoning_content') return endText(current, 'reasoning_content', delta) ?? endText(current, 'reasoning', delta) ?? endDetails(current, delta);
      return endText(current, channel as TextField, delta);
    };

    const endText = (current: ChoiceState, field: TextField, delta: Record<string, unknown>): Finding | null => {
      const guard = current.texts.get(field);
      if (!guard) return null;
      current.texts.delete(field);
      const step = guard.end();
      if (step.release) delta[field] = `${typeof delta[field] === 'string' ? delta[field] : ''}${step.release}`;
      return take(step, changedSpans(current, field), current.bases.get(field));
    };

    /** Applies one step of a reasoning_details text; its findings are reported unless the reasoning carried them too. */
    const takeDetail = (current: ChoiceState, open: OpenDetail, step: StreamStep): Finding | null => {
      if (step.findings.some((finding) => finding.action === 'redact')) open.redacted = true;
      const copy = (current.pushed.get('reasoning') ?? 0) + (current.pushed.get('reasoning_content') ?? 0) > 0;
      return copy && !step.blocked ? null : take(step);
    };

    /** Ends the reasoning_details texts of a choice, appending what they held to `delta` (unsigned); the block, if any. */
    const endDetails = (current: ChoiceState, delta: Record<string, unknown>): Finding | null => {
      for (const [key, open] of [...current.details]) {
        current.details.delete(key);
        const step = open.guard.end();
        if (step.release !== '') delta.reasoning_details = [...(Array.isArray(delta.reasoning_details) ? delta.reasoning_details : []), withDetailText(open.entry, open.field, step.release, true)];
        const blocked = takeDetail(current, open, step);
        if (blocked) return blocked;
      }
      return null;
    };

    const endTool = (current: ChoiceState, toolIndex: number, delta: Record<string, unknown>): Finding | null => {
      const guard = current.tools.get(toolIndex);
      if (!guard) return null;
      current.tools.delete(toolIndex);
      const step = guard.end();
      const blocked = take(step);
      if (blocked || !step.release) return blocked;
      if (toolIndex === LEGACY_CALL) {
        const call = isRecord(delta.function_call) ? delta.function_call : {};
        delta.function_call = { ...call, arguments: `${typeof call.arguments === 'string' ? call.arguments : ''}${step.release}` };
        return null;
      }
      const calls = Array.isArray(delta.tool_calls) ? [...(delta.tool_calls as Choice[])] : [];
      const at = calls.findIndex((call) => call.index === toolIndex);
      const slot: CallText = current.custom.has(toolIndex) ? { holder: 'custom', field: 'input', text: '' } : { holder: 'function', field: 'arguments', text: '' };
      if (at === -1) calls.push(withCallText({ index: toolIndex }, slot, step.release));
      else {
        const call = calls[at] as Choice;
        calls[at] = withCallText(call, slot, `${callText(call)?.text ?? ''}${step.release}`);
      }
      delta.tool_calls = calls;
      return null;
    };

    /** What a choice still holds, appended to `delta` (text to its content, arguments to their tool call). */
    const flushChoice = (current: ChoiceState, delta: Record<string, unknown>): Finding | null => {
      for (const field of [...current.texts.keys()]) {
        const blocked = endText(current, field, delta);
        if (blocked) return blocked;
      }
      for (const toolIndex of [...current.tools.keys()]) {
        const blocked = endTool(current, toolIndex, delta);
        if (blocked) return blocked;
      }
      return endDetails(current, delta) ?? endTranscript(current, delta);
    };

    /** Ends a spoken answer's transcript, appending what it held to `delta.audio.transcript`; the block, if any. */
    const endTranscript = (current: ChoiceState, delta: Record<string, unknown>): Finding | null => {
      const guard = current.transcript;
      if (!guard) return null;
      current.transcript = null;
      const step = guard.end();
      if (step.release) {
        const audio = isRecord(delta.audio) ? delta.audio : {};
        delta.audio = { ...audio, transcript: `${transcriptOf(audio) ?? ''}${step.release}` };
      }
      return take(step);
    };

    /**
     * An Anthropic or Gemini stream passed through as the upstream sent it (its first chunk carried the upstream's
     * events): its events are guarded in place, so the client keeps getting them (see AnthropicEventGuard and
     * GeminiEventGuard); null for any other.
     */
    let events: EventGuard | null | undefined;
    /**
     * An OpenAI-format upstream's stream (its first chunk carried the event's own text): plain events are held until
     * their text is released and go on as the upstream wrote them when the rules changed none of it (see
     * HeldNativeEvents); null for any other stream, whose chunks are all rebuilt.
     */
    let own: HeldNativeEvents | null | undefined;
    /** Sends `chunk` with the guarded form of the events `event` carried, if the stream is passed through. */
    const send = (chunk: ChatCompletionChunk, event: ResponseEvent | null): void => {
      const native = event?.native;
      if (events && native?.events) subscriber.next({ kind: 'chunk', chunk, native: { format: native.format, events: events.pass(native.events) } });
      else subscriber.next({ kind: 'chunk', chunk });
    };

    /**
     * The usage chunk just read (choices `[]`), held until the next event tells whether it is the stream's last: taken
     * for the end on arrival, it ended every choice, and an OpenAI-compatible server that sends one mid-stream (or
     * one after each choice) had the text after it dropped and the held tail released unchecked.
     */
    let usage: Extract<ResponseEvent, { kind: 'chunk' }> | null = null;
    /** The first choice's content as the upstream wrote it: how much came, and how much the guard released. */
    const firstContent = (): { pushed: number; settled: number } => {
      const first = states.get(0);
      const pushed = first?.pushed.get('content') ?? 0;
      return { pushed, settled: pushed - (first?.texts.get('content')?.held ?? 0) };
    };
    /** Sends the held usage chunk: at the end, after what every open choice holds; mid-stream, with the texts left open. */
    const sendUsage = (final: boolean): void => {
      const event = usage;
      if (!event) return;
      usage = null;
      if (!final) {
        own?.flush(firstContent().settled);
        send({ ...event.chunk }, event);
        return;
      }
      const flushed = flushAll(event.chunk);
      if (!flushed && own?.take(event, [], 0, 0)) return;
      own?.flush();
      if (flushed) subscriber.next({ kind: 'chunk', chunk: flushed });
      send({ ...event.chunk }, event);
    };

    const subscription = source.subscribe({
      next(event) {
        if (event.kind !== 'chunk') {
          if (event.kind === 'completion') {
            try {
              const native = event.native;
              if (native?.format === 'openai-responses' && native.body) return subscriber.next(guardResponse(event, native.body, options));
              const guarded = guardCompletion(event.completion, options);
              // Nothing changed: the event goes on as it came, with the upstream's own answer (native) if it has one,
              // once the parts of it the canonical answer has no form for are checked too.
              if (guarded === event.completion) return subscriber.next(native?.body ? guardNativeAnswer(event, native.format, native.body, options) : event);
              subscriber.next({ kind: 'completion', completion: guarded });
            } catch (err) {
              subscriber.error(err);
            }
            return;
          }
          subscriber.next(event);
          return;
        }
        const chunk = event.chunk;
        last = chunk;
        // A usage chunk followed by more is not the end: it goes on in its place, and the texts stay open.
        if (usage) {
          try {
            sendUsage(false);
          } catch (err) {
            subscriber.error(err);
            return;
          }
        }
        // The first chunk decides, as it does for the dialect (a stream is passed through whole or not at all).
        if (events === undefined) events = event.native?.events ? eventGuard(event.native.format, options) : null;
        if (own === undefined) own = event.native?.format === 'openai' && event.native.text !== undefined ? new HeldNativeEvents((out) => subscriber.next(out)) : null;
        try {
          // A chunk with neither choices nor usage only carried an upstream's own events (native pass-through: a read
          // that made no canonical chunk, such as a content block's start): they go on, guarded; it is not the end
          // of the text (taken for the usage chunk, it ended every choice, and the rest of an Anthropic stream was lost).
          if (chunk.choices.length === 0 && !chunk.usage) {
            if (events && event.native?.events) send({ ...chunk }, event);
            return;
          }
          if (chunk.choices.length === 0) {
            // A usage chunk: the last one ends the text, but some servers send one mid-stream (or after each choice).
            usage = event;
            return;
          }
          const before: Choice[] = [];
          const choices = chunk.choices.map((choice) => (isRecord(choice) ? guardChoice(choice, before) : choice)).filter((choice) => choice !== null);
          if (own) {
            const { pushed, settled } = firstContent();
            if (before.length === 0 && own.take(event, choices as Choice[], pushed, settled)) return;
            own.flush(settled);
          }
          // What the texts the model moved on from held goes out first, in a chunk of its own.
          if (before.length > 0) subscriber.next({ kind: 'chunk', chunk: { ...chunk, choices: before, ...('usage' in chunk ? { usage: null } : {}) } });
          // Every choice of this chunk had ended (blocked): nothing to send unless it carries usage (or events).
          if (choices.length === 0 && !chunk.usage && !(events && event.native?.events)) return;
          send({ ...chunk, choices }, event);
        } catch (err) {
          // What was released before a block that fails the answer went out before it, as it always did.
          own?.flush();
          subscriber.error(err);
        }
      },
      error(err: unknown) {
        try {
          sendUsage(false);
          own?.flush();
        } catch {
          // The stream fails with the upstream's error, not with what sending its last chunks ran into.
        }
        subscriber.error(err);
      },
      complete() {
        try {
          sendUsage(true);
          own?.flush();
          // A stream that ended without finish_reason or usage chunk: send what is held rather than lose it.
          const flushed = last ? flushAll(last) : null;
          const rest = events?.end() ?? [];
          if (flushed || rest.length > 0) {
            const chunk = flushed ?? { ...(last as ChatCompletionChunk), choices: [] };
            if (rest.length > 0 && events) subscriber.next({ kind: 'chunk', chunk, native: { format: events.format, events: rest } });
            else subscriber.next({ kind: 'chunk', chunk });
          }
          subscriber.complete();
        } catch (err) {
          subscriber.error(err);
        }
      },
    });

    /** A chunk shaped like `like` with what every unfinished choice holds; null when none holds anything. */
    function flushAll(like: ChatCompletionChunk): ChatCompletionChunk | null {
      const choices: Choice[] = [];
      for (const [index, current] of states) {
        if (current.ended || (current.texts.size === 0 && current.tools.size === 0 && current.details.size === 0 && current.transcript === null)) continue;
        const delta: Record<string, unknown> = {};
        const blocked = flushChoice(current, delta);
        current.ended = true;
        const logprobs = blocked ? null : releaseLogprobs(current, true);
        current.logprobs = [];
        if (blocked) {
          const audio = blockedAudio(delta.audio);
          choices.push({ index, delta: { content: typeof delta.content === 'string' ? delta.content : '', ...(audio ? { audio } : {}) }, logprobs: null, finish_reason: 'content_filter' });
        } else if (delta.content || delta.reasoning_content || delta.reasoning || delta.refusal || delta.tool_calls || delta.function_call || delta.reasoning_details || delta.audio || logprobs) choices.push({ index, delta, logprobs, finish_reason: null });
      }
      if (choices.length === 0) return null;
      return { ...like, choices, ...('usage' in like ? { usage: null } : {}) };
    }

    return () => subscription.unsubscribe();
  });
}
