/**
 * An OpenAI-format upstream's stream under output rules, sent as the upstream wrote it wherever the rules changed
 * nothing. The stream guard releases each choice's text a look-behind later than it came, so the guarded chunks'
 * texts never line up with the upstream's events, and every chunk used to be rebuilt and re-serialised (about 30 µs
 * a 20-chunk stream, and the upstream's spellings lost). Instead each plain event (one choice, its text only in
 * `content`) is held until the guard has released its whole text: when what was released starts with that text,
 * the event goes on as it came (`native` kept: the dialect writes its bytes); when it does not (a redaction), it goes
 * rebuilt carrying what was released, and the events after the change go on as they came again once the released
 * text reads as theirs (see changeEnd). The client gets the same text either way, no sooner than the guard lets it
 * go, and the events' other fields unchanged; only empty deltas that went out ahead of their text now wait with it.
 * Any other chunk (logprobs, tool calls, reasoning, another choice, a block) is sent rebuilt as before, the held
 * events first.
 */
import type { ChatCompletionChunk, ResponseEvent } from '../core/canonical.js';
import { isRecord } from '../core/is-record.js';

type Choice = Record<string, unknown>;

interface Held {
  event: Extract<ResponseEvent, { kind: 'chunk' }>;
  /** The event's own text (its choice's `content`). */
  text: string;
  /** Where that text starts in the choice's content as the upstream wrote it. */
  start: number;
  /** The guarded choice (what would be sent without holding), null for a chunk without choices. */
  guarded: Choice | null;
  /** It ends the text (a finish reason, the usage chunk): everything is released by now. */
  closes: boolean;
}

/** `delta.content` when it is a string, else ''. */
function contentOf(choice: Choice): string {
  return isRecord(choice.delta) && typeof choice.delta.content === 'string' ? choice.delta.content : '';
}

/**
 * Whether the guard changed nothing of `choice` but its content: no block (finish reason kept), no logprobs, no
 * other text field (reasoning, refusal, tool calls) in the upstream's delta or added by the guard.
 */
function onlyContentGuarded(choice: Choice, guarded: Choice): boolean {
  if (choice.logprobs != null || guarded.logprobs != null || guarded.finish_reason !== choice.finish_reason) return false;
  const delta = isRecord(choice.delta) ? choice.delta : {};
  const after = isRecord(guarded.delta) ? guarded.delta : {};
  if (delta.tool_calls !== undefined || delta.function_call !== undefined || delta.thinking_blocks !== undefined || typeof delta.reasoning_content === 'string' || typeof delta.reasoning === 'string' || typeof delta.refusal === 'string') return false;
  for (const key in after) if (key !== 'content' && after[key] !== delta[key]) return false;
  for (const key in delta) if (key !== 'content' && !(key in after)) return false;
  return true;
}

/** One OpenAI-format stream's held events (see the module comment); `send` is the guarded stream's subscriber. */
export class HeldNativeEvents {
  private readonly held: Held[] = [];
  /** Text the guard released that no event has carried yet. */
  private unsent = '';
  /**
   * Offsets in the choice's content as the upstream wrote it: where the text `unsent` was released from starts,
   * and how far the guard has released (settled) it.
   */
  private unsentFrom = 0;
  private settled = 0;
  /** Whether the stream's first event went out: it always goes at once, as it did (the client's first byte). */
  private opened = false;

  constructor(private readonly send: (event: ResponseEvent) => void) {}

  /**
   * Takes a chunk the guard has checked (`guarded`: its choices as they would be sent) when it is plain: one choice
   * changed only in its content, or the usage chunk. False for any other: the caller then calls `flush()` and sends
   * it rebuilt as before.
   */
  take(event: Extract<ResponseEvent, { kind: 'chunk' }>, guarded: readonly Choice[], pushed: number, settled: number): boolean {
    const choices = event.chunk.choices;
    if (choices.length === 0) {
      if (guarded.length !== 0 || !event.chunk.usage) return false;
      this.held.push({ event, text: '', start: pushed, guarded: null, closes: true });
      this.drain(true);
      return true;
    }
    const choice = choices[0];
    const after = guarded[0];
    if (choices.length !== 1 || guarded.length !== 1 || !isRecord(choice) || !isRecord(after) || (choice.index ?? 0) !== 0 || !onlyContentGuarded(choice, after)) return false;
    const text = contentOf(choice);
    this.unsent += contentOf(after);
    this.settled = settled;
    const closes = choice.finish_reason !== null && choice.finish_reason !== undefined;
    this.held.push({ event, text, start: pushed - text.length, guarded: after, closes });
    this.drain(closes);
    // A first event whose text is still held (a role chunk carrying text) goes now, carrying what was released.
    if (!this.opened && this.held.length > 0) this.sendRebuilt(this.unsent.length, this.settled);
    this.opened = true;
    return true;
  }

  /**
   * Sends every held event, each released text with one of them: before a chunk that is not plain (whose own text
   * the guard has released up to `settled`), at the end.
   */
  flush(settled = this.settled): void {
    this.opened = true;
    this.drain(true);
    this.unsentFrom = this.settled = settled;
  }

  /**
   * Sends the held events whose text is out. `final`: nothing more will be released before what follows, so every
   * held event goes now and the last one carries whatever was released and not yet sent.
   */
  private drain(final: boolean): void {
    while (this.held.length > 0) {
      const head = this.held[0]!;
      // The released text left after this event must be carried by a later held one (the usage chunk carries none).
      const exact = head.closes || !(this.held.length > 1 && this.held[1]!.guarded !== null);
      if (this.unsent.startsWith(head.text) && (!exact || this.unsent.length === head.text.length)) {
        this.send(head.event);
        this.unsent = this.unsent.slice(head.text.length);
        this.unsentFrom += head.text.length;
      } else if (!final && !head.closes && (this.held.length === 1 || head.text.startsWith(this.unsent))) {
        return; // its text is not all released yet, or the next event is needed to tell where a change ends
      } else {
        const from = exact ? this.settled : this.changeEnd(final);
        if (from === null) return;
        this.sendRebuilt(this.unsent.length - (this.settled - from), from);
        continue;
      }
      this.held.shift();
    }
  }

  /** Sends the head event rebuilt with the first `carried` characters of `unsent`; the rest is released from `from` on. */
  private sendRebuilt(carried: number, from: number): void {
    const head = this.held.shift()!;
    this.send({ kind: 'chunk', chunk: this.rebuilt(head, this.unsent.slice(0, carried)) });
    this.unsent = this.unsent.slice(carried);
    this.unsentFrom = from;
  }

  /**
   * Where the upstream's text reads again as released, when the rules changed the head event's: the first start of a
   * later held event from which the rest of the released text is the events' own text. The head carries what was
   * released before it, the events between carry nothing, and that one and those after go on as they came. Null
   * while the change may still run on (no such start is released yet); at the end, the head carries everything.
   */
  private changeEnd(final: boolean): number | null {
    for (let i = 1; i < this.held.length; i++) {
      const { start, guarded } = this.held[i]!;
      if (start > this.settled || guarded === null) break;
      const length = this.settled - start;
      if (start < this.unsentFrom || length > this.unsent.length) continue;
      let own = '';
      for (let j = i; j < this.held.length && own.length < length; j++) own += this.held[j]!.text;
      if (this.unsent.endsWith(own.slice(0, length))) return start;
    }
    return final ? this.settled : null;
  }

  /** A held event as the guard made it, carrying `text`: released text that reads differently from its own. */
  private rebuilt(head: Held, text: string): ChatCompletionChunk {
    const chunk = head.event.chunk;
    if (head.guarded === null) return { ...chunk };
    const delta = isRecord(head.guarded.delta) ? head.guarded.delta : {};
    const content = text !== '' || typeof delta.content === 'string' ? { content: text } : {};
    return { ...chunk, choices: [{ ...head.guarded, delta: { ...delta, ...content } }] };
  }
}
