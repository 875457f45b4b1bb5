import type { NativeStreamEvent } from '../core/canonical.js';
import { eventData } from '../core/event-data.js';
import { isRecord } from '../core/is-record.js';
import { geminiCodeText } from './native-answer-parts.js';
import type { StreamStep, TextStreamGuard } from './text-stream-guard.js';

type Json = Record<string, unknown>;

/**
 * Output rules on a Gemini stream passed through as the upstream sent it: each candidate's answer text and thought
 * text go through a stream guard of their own, and each event's text parts carry what the guard releases (held back
 * while a match may still span the next event, redacted where one was found); what is held goes out in the event
 * with the candidate's finish reason. A function call arrives whole and is checked whole. An event whose text the
 * guard left as it was goes out as it came, and every field of every event (grounding and citation metadata,
 * safety ratings, thought signatures, usage) is kept. A blocking finding ends the candidate's text there: its later
 * content is dropped, and the event that finishes it goes out with `finishReason: "SAFETY"` and no content, its
 * usage kept (Gemini counts the answer's tokens in the last event only: ended at the block, a client was told none
 * were generated). (The canonical chunks are guarded alongside for the stages and logs that read them; this guard
 * reports nothing itself.)
 */
export class GeminiEventGuard {
  readonly format = 'gemini';
  private readonly texts = new Map<string, TextStreamGuard>();
  /** Candidates a rule blocked, whose finishing event has not come yet: their content is dropped until it does. */
  private readonly refused = new Set<number>();
  /** Candidates whose SAFETY finish went out: anything more of theirs is dropped. */
  private readonly closed = new Set<number>();

  /**
   * `report` is told what the rules found in the texts no canonical chunk carries (code execution parts), which the
   * canonical guard alongside cannot report; it may throw to fail the answer on a block.
   */
  constructor(
    private readonly newGuard: () => TextStreamGuard,
    private readonly report: (step: StreamStep) => void = () => {},
  ) {}

  pass(events: readonly NativeStreamEvent[]): NativeStreamEvent[] {
    const out: NativeStreamEvent[] = [];
    for (const item of events) {
      const data = eventData(item);
      if (data === null || !Array.isArray(data.candidates)) {
        out.push(item);
        continue;
      }
      let changed = false;
      const kept: unknown[] = [];
      data.candidates.forEach((candidate: unknown, position: number) => {
        if (!isRecord(candidate)) return kept.push(candidate);
        const index = typeof candidate.index === 'number' ? candidate.index : position;
        if (this.closed.has(index) || (this.refused.has(index) && (candidate.finishReason === undefined || candidate.finishReason === null))) {
          changed = true;
          return;
        }
        if (this.refused.has(index)) {
          changed = true;
          this.refused.delete(index);
          kept.push(this.refusal(candidate, index));
          return;
        }
        if (this.candidate(candidate, index)) changed = true;
        kept.push(candidate);
      });
      if (!changed) out.push(item);
      // Only a refused candidate's dropped content: the event goes too (its running usage is repeated by later ones).
      else if (kept.length > 0) out.push({ event: item.event, data: JSON.stringify({ ...data, candidates: kept }) });
    }
    return out;
  }

  /** A refused candidate's finishing event: no content, `finishReason: "SAFETY"`, its other fields kept. */
  private refusal(candidate: Json, index: number): Json {
    this.closed.add(index);
    const { content: _dropped, logprobsResult: _spelled, finishMessage: _message, ...rest } = candidate;
    return { ...rest, index, finishReason: 'SAFETY' };
  }

  /** What the candidates still hold, for a stream that ended without their finish reason (cut off). */
  end(): NativeStreamEvent[] {
    const indexes = new Set([...this.texts.keys()].map((key) => Number(key.split(':')[0])));
    const candidates: Json[] = [];
    for (const index of indexes) {
      const parts: Json[] = [];
      if (this.flush(index, null, parts)) {
        // Blocked by what it held: the safe text before the match, and the refusal.
        this.refuse(index);
        this.refused.delete(index);
        this.closed.add(index);
        candidates.push({ ...(parts.length > 0 ? { content: { parts, role: 'model' } } : {}), index, finishReason: 'SAFETY' });
      } else if (parts.length > 0) candidates.push({ content: { parts, role: 'model' }, index });
    }
    // Refused candidates the upstream never finished still end, as refusals.
    for (const index of this.refused) candidates.push(this.refusal({}, index));
    this.refused.clear();
    return candidates.length === 0 ? [] : [{ event: '', data: JSON.stringify({ candidates }) }];
  }

  /** Marks a candidate refused: what its guards still hold is dropped. */
  private refuse(index: number): void {
    this.refused.add(index);
    for (const kind of ['t', 'a']) this.texts.delete(`${index}:${kind}`);
  }

  /**
   * Sends what the candidate's guards other than `keep` hold (all of them when null) as parts into `parts`: thought
   * text ends before the answer starts, and text before a call. True when what was held blocked the answer.
   */
  private flush(index: number, keep: string | null, parts: Json[]): boolean {
    for (const kind of ['t', 'a']) {
      if (kind === keep) continue;
      const key = `${index}:${kind}`;
      const guard = this.texts.get(key);
      if (!guard) continue;
      this.texts.delete(key);
      const step = guard.end();
      if (step.release !== '') parts.push(kind === 't' ? { text: step.release, thought: true } : { text: step.release });
      if (step.blocked) return true;
    }
    return false;
  }

  /** Guards one candidate of an event in place; true when it changed. */
  private candidate(candidate: Json, index: number): boolean {
    const content = isRecord(candidate.content) ? candidate.content : null;
    const parts = content && Array.isArray(content.parts) ? content.parts : [];
    const out: Json[] = [];
    let changed = false;
    // Logprobs spell the candidate's text token by token, the part a rule holds back, redacts or blocks included; a
    // candidate whose text goes through the guards cannot keep them (the OpenAI form holds them with its text).
    if (candidate.logprobsResult !== undefined && parts.some((part) => isRecord(part) && typeof part.text === 'string')) {
      delete candidate.logprobsResult;
      changed = true;
    }
    // The safe text before the match goes out; the candidate ends as a refusal now if this event finishes it, else
    // with the event that does (see pass).
    const block = (): true => {
      if (content) content.parts = out;
      else candidate.content = { parts: out, role: 'model' };
      this.refuse(index);
      if (candidate.finishReason !== undefined && candidate.finishReason !== null) {
        this.refused.delete(index);
        this.closed.add(index);
        candidate.finishReason = 'SAFETY';
      }
      return true;
    };
    for (const part of parts) {
      if (!isRecord(part)) {
        out.push(part as Json);
        continue;
      }
      const kind = typeof part.text === 'string' ? (part.thought === true ? 't' : 'a') : null;
      const before = out.length;
      if (this.flush(index, kind, out)) return block();
      if (out.length !== before) changed = true;
      if (kind !== null) {
        const key = `${index}:${kind}`;
        let guard = this.texts.get(key);
        if (!guard) this.texts.set(key, (guard = this.newGuard()));
        const step = guard.push(part.text as string);
        if (step.release !== part.text) {
          changed = true;
          out.push({ ...part, text: step.release });
        } else out.push(part);
        if (step.blocked) return block();
        continue;
      }
      // The code the model runs with the code execution tool, and what it printed, come whole too: each is checked
      // whole, a text of its own (the canonical answer has no form for them: see native-answer-parts.ts).
      const code = geminiCodeText(part);
      if (code) {
        const guard = this.newGuard();
        const first = guard.push(code.text);
        const rest = guard.end();
        const blocked = first.blocked ?? rest.blocked;
        this.report({ release: first.release + rest.release, findings: [...first.findings, ...rest.findings], blocked });
        if (blocked) return block();
        if (first.release + rest.release !== code.text) {
          changed = true;
          out.push(code.with(first.release + rest.release));
          continue;
        }
      }
      if (isRecord(part.functionCall) && isRecord(part.functionCall.args)) {
        // A call comes whole: its arguments are checked whole, as JSON text, and read back when a rule changed them.
        const text = JSON.stringify(part.functionCall.args);
        const guard = this.newGuard();
        const first = guard.push(text);
        const rest = guard.end();
        const release = first.release + rest.release;
        if (first.blocked || rest.blocked) return block();
        if (release !== text) {
          changed = true;
          out.push({ ...part, functionCall: { ...part.functionCall, args: argumentsOf(release) } });
          continue;
        }
      }
      out.push(part);
    }
    if (candidate.finishReason !== undefined && candidate.finishReason !== null) {
      const before = out.length;
      if (this.flush(index, null, out)) return block();
      if (out.length !== before) changed = true;
    }
    if (changed) {
      if (content) content.parts = out;
      else candidate.content = { parts: out, role: 'model' };
    }
    return changed;
  }
}

/** Redacted arguments read back; an object that no longer parses is replaced by one that says so (never the original). */
function argumentsOf(text: string): Json {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isRecord(parsed)) return parsed;
  } catch {
    // fall through
  }
  return { redacted: text };
}
