import type { NativeStreamEvent } from '../core/canonical.js';
import { eventData } from '../core/event-data.js';
import { isRecord } from '../core/is-record.js';
import type { TextStreamGuard } from './text-stream-guard.js';

type Json = Record<string, unknown>;

/**
 * Output rules on a Gemini stream passed through as the upstream sent it: each candidate's answer text and thought
 * text go through a stream guard of their own, and each event's text parts carry what the guard releases (held back
 * while a match may still span the next event, redacted where one was found); what is held goes out in the event
 * with the candidate's finish reason. A function call arrives whole and is checked whole. An event whose text the
 * guard left as it was goes out as it came, and every field of every event (grounding and citation metadata,
 * safety ratings, thought signatures, usage) is kept. A blocking finding ends the candidate there with
 * `finishReason: "SAFETY"`; later events are dropped. (The canonical chunks are guarded alongside for the stages
 * and logs that read them; this guard reports nothing itself.)
 */
export class GeminiEventGuard {
  readonly format = 'gemini';
  private readonly texts = new Map<string, TextStreamGuard>();
  private ended = false;

  constructor(private readonly newGuard: () => TextStreamGuard) {}

  pass(events: readonly NativeStreamEvent[]): NativeStreamEvent[] {
    const out: NativeStreamEvent[] = [];
    for (const item of events) {
      if (this.ended) break;
      const data = eventData(item);
      if (data === null || !Array.isArray(data.candidates)) {
        out.push(item);
        continue;
      }
      let changed = false;
      data.candidates.forEach((candidate: unknown, position: number) => {
        if (isRecord(candidate) && this.candidate(candidate, typeof candidate.index === 'number' ? candidate.index : position)) changed = true;
      });
      out.push(changed ? { event: item.event, data: JSON.stringify(data) } : item);
    }
    return out;
  }

  /** What the candidates still hold, for a stream that ended without their finish reason (cut off). */
  end(): NativeStreamEvent[] {
    if (this.ended) return [];
    const indexes = new Set([...this.texts.keys()].map((key) => Number(key.split(':')[0])));
    const candidates: Json[] = [];
    for (const index of indexes) {
      const parts: Json[] = [];
      this.flush(index, null, parts);
      if (parts.length > 0) candidates.push({ content: { parts, role: 'model' }, index });
    }
    return candidates.length === 0 ? [] : [{ event: '', data: JSON.stringify({ candidates }) }];
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
    const block = (): true => {
      if (content) content.parts = out;
      else candidate.content = { parts: out, role: 'model' };
      candidate.finishReason = 'SAFETY';
      this.ended = true;
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
