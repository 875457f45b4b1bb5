import type { NativeStreamEvent } from '../core/canonical.js';
import { eventData } from '../core/event-data.js';
import { isRecord } from '../core/is-record.js';
import { itemShowing, partField, textKey, withoutLogprobs } from './responses-texts.js';
import type { StreamStep, TextStreamGuard } from './text-stream-guard.js';

type Json = Record<string, unknown>;

/** A text a Responses stream carries in deltas: its `.done` event, the field that holds it whole there, where it is. */
interface TextKind {
  delta: string;
  done: string;
  field: 'text' | 'refusal' | 'arguments' | 'input';
  where: 'c' | 's' | 'a';
  /** The canonical chunks do not carry it (a custom tool's input): this guard reports what it finds. */
  own?: true;
}

const KINDS: TextKind[] = [
  { delta: 'response.output_text.delta', done: 'response.output_text.done', field: 'text', where: 'c' },
  { delta: 'response.refusal.delta', done: 'response.refusal.done', field: 'refusal', where: 'c' },
  { delta: 'response.function_call_arguments.delta', done: 'response.function_call_arguments.done', field: 'arguments', where: 'a' },
  { delta: 'response.reasoning_summary_text.delta', done: 'response.reasoning_summary_text.done', field: 'text', where: 's' },
  // Raw reasoning (an open-weight model's reasoning_text parts): the canonical chunks do not carry it either.
  { delta: 'response.reasoning_text.delta', done: 'response.reasoning_text.done', field: 'text', where: 'c', own: true },
  { delta: 'response.custom_tool_call_input.delta', done: 'response.custom_tool_call_input.done', field: 'input', where: 'a', own: true },
];
const BY_DELTA = new Map(KINDS.map((kind) => [kind.delta, kind]));
const BY_DONE = new Map(KINDS.map((kind) => [kind.done, kind]));
const FINAL = new Set(['response.completed', 'response.incomplete']);
const SEQUENCE = /"sequence_number"\s*:\s*(\d+)/;

/** One text of the answer as it streams. */
interface Text {
  kind: TextKind;
  guard: TextStreamGuard;
  /** What the client was sent of it (the held delta's release included). */
  sent: string;
  /** Its last delta's data, the model of a delta the gateway adds. */
  last: Json | null;
  ended: boolean;
}

/** The open text's last delta, held until its next one or its end so the guard's tail can go out in it. */
interface Pending {
  key: string;
  item: NativeStreamEvent;
  data: Json;
  release: string;
}

function keyOf(kind: TextKind, data: Json): string {
  const index = kind.where === 'c' ? data.content_index : kind.where === 's' ? data.summary_index : 0;
  return textKey(Number(data.output_index), kind.where, Number(index));
}

/** An event's type: its SSE name, else the `type` its data holds. */
function typeOf(item: NativeStreamEvent): string {
  if (item.event !== '') return item.event;
  const data = eventData(item);
  return data && typeof data.type === 'string' ? data.type : '';
}

/**
 * Output rules on an OpenAI Responses API stream passed through as the upstream sent it (OpenAI, Azure's v1 API):
 * each text (a message's output_text or refusal, a function or custom tool call's arguments or input, a reasoning
 * summary) goes through a
 * stream guard of its own, and its delta events carry what the guard releases: held back while a match may still
 * span the next delta, redacted where one was found. A text's last delta is held until the next one comes, so the
 * guard's tail goes out in it and the stream keeps the upstream's events and sequence numbers; a delta is added
 * (the numbers after it moved on by one) only when another event came between. The `.done` events, the parts' and
 * items' `.done` and the final Response show the text as it was sent (the SDK's snapshot is replaced by them). Every
 * other event goes out as it came: reasoning with its encrypted content, built-in tools' items, annotations.
 * A blocking finding ends the answer there, as OpenAI ends one its content filter stopped: the safe text before the
 * match goes out, later events are dropped, the blocked text's `.done`, its part's and its item's `.done` (status
 * `incomplete`) close it, and `response.incomplete` with `incomplete_details.reason: "content_filter"`, the items
 * finished before it and the upstream's usage ends the stream. (The canonical chunks are guarded alongside for the
 * stages and logs that read them; this guard reports nothing itself.)
 */
export class ResponsesEventGuard {
  readonly format = 'openai-responses';
  private readonly texts = new Map<string, Text>();
  /** The open text's held delta, and the other events that came after it (held too, so their order stays). */
  private pending: Pending | null = null;
  private readonly queue: NativeStreamEvent[] = [];
  /** Items as output_item.added began them, and content or summary parts as they were added (for a block's close). */
  private readonly added = new Map<number, Json>();
  private readonly parts = new Map<string, Json>();
  /** Items as their output_item.done went out, by output index. */
  private readonly finished = new Map<number, Json>();
  private created: Json | null = null;
  /** Events the gateway added so far: the upstream's later events are numbered on by it. */
  private shift = 0;
  private lastData = '';
  /** The text a rule blocked: what follows is dropped until the stream is closed as incomplete. */
  private refused: string | null = null;
  private ended = false;

  /** `report` takes the steps of the texts only this guard sees (it may throw to fail the answer, output_block: error). */
  constructor(
    private readonly newGuard: () => TextStreamGuard,
    private readonly report: (step: StreamStep) => void = () => {},
  ) {}

  pass(events: readonly NativeStreamEvent[]): NativeStreamEvent[] {
    const out: NativeStreamEvent[] = [];
    for (const item of events) {
      if (this.ended) break;
      const type = typeOf(item);
      if (this.refused !== null) {
        // After a block, only the upstream's end matters: its Response (usage) closes the answer as incomplete.
        if (FINAL.has(type)) this.close(out, eventData(item)?.response);
        continue;
      }
      const deltaKind = BY_DELTA.get(type);
      if (deltaKind) {
        this.delta(item, deltaKind, out);
        continue;
      }
      const doneKind = BY_DONE.get(type);
      if (doneKind) this.done(item, doneKind, out);
      else if (type === 'response.output_item.done') this.itemDone(item, out);
      else if (type === 'response.content_part.done' || type === 'response.reasoning_summary_part.done') this.partDone(item, type, out);
      else if (FINAL.has(type)) this.final(item, out);
      else {
        this.remember(type, item);
        // Behind a held delta (an annotation, a built-in tool's progress), an event waits for it, in order.
        if (this.pending) this.queue.push(item);
        else this.emit(out, item);
      }
    }
    return out;
  }

  /** What is still held, for a stream that ended without its final event (cut off). */
  end(): NativeStreamEvent[] {
    const out: NativeStreamEvent[] = [];
    if (this.ended) return out;
    for (const [key, text] of this.texts) if (this.refused === null && !this.endText(key, text, out, true)) break;
    this.flush(out);
    if (this.refused !== null) this.close(out, null);
    return out;
  }

  /** Keeps what a block's close needs: the Response begun, the items and parts as they were added. */
  private remember(type: string, item: NativeStreamEvent): void {
    if (type !== 'response.created' && type !== 'response.output_item.added' && type !== 'response.content_part.added' && type !== 'response.reasoning_summary_part.added') return;
    const data = eventData(item);
    if (!data) return;
    if (type === 'response.created' && isRecord(data.response)) this.created = data.response;
    else if (type === 'response.output_item.added' && isRecord(data.item)) this.added.set(Number(data.output_index), data.item);
    else if (type === 'response.content_part.added' && isRecord(data.part)) this.parts.set(textKey(Number(data.output_index), 'c', Number(data.content_index)), data.part);
    else if (isRecord(data.part)) this.parts.set(textKey(Number(data.output_index), 's', Number(data.summary_index)), data.part);
  }

  private text(key: string, kind: TextKind): Text {
    let text = this.texts.get(key);
    if (!text) this.texts.set(key, (text = { kind, guard: this.newGuard(), sent: '', last: null, ended: false }));
    return text;
  }

  private delta(item: NativeStreamEvent, kind: TextKind, out: NativeStreamEvent[]): void {
    const data = eventData(item);
    if (!data || typeof data.delta !== 'string') {
      if (this.pending) this.queue.push(item);
      else this.emit(out, item);
      return;
    }
    const key = keyOf(kind, data);
    // A delta after its text's `.done` (not in OpenAI's streams) starts the text afresh rather than pass unchecked.
    if (this.texts.get(key)?.ended) this.texts.delete(key);
    const text = this.text(key, kind);
    const step = this.step(kind, text.guard.push(data.delta));
    text.sent += step.release;
    text.last = data;
    this.flush(out);
    this.pending = { key, item, data, release: step.release };
    if (step.blocked) this.block(key, out);
  }

  private step(kind: TextKind, step: StreamStep): StreamStep {
    if (kind.own) this.report(step);
    return step;
  }

  /** Sends the held delta (with what its text released) and the events held behind it. */
  private flush(out: NativeStreamEvent[]): void {
    const pending = this.pending;
    this.pending = null;
    if (pending) {
      // A delta's logprobs spell its own text, which the guard may still hold (what it releases is older text): they
      // never go out with it. The text's .done and the final Response carry them whole when the text went unchanged.
      const bare = withoutLogprobs(pending.data);
      if (pending.release === pending.data.delta && bare === pending.data) this.emit(out, pending.item);
      else this.emit(out, pending.item, { ...bare, delta: pending.release });
    }
    for (const item of this.queue.splice(0)) this.emit(out, item);
  }

  /**
   * Ends a text: what its guard holds goes out in its held delta, or in a delta of its own when another text's
   * delta came between (`deltas`: the text was streamed in deltas at all). False when what it held blocked the answer.
   */
  private endText(key: string, text: Text, out: NativeStreamEvent[], deltas: boolean): boolean {
    if (text.ended) return true;
    text.ended = true;
    const step = this.step(text.kind, text.guard.end());
    text.sent += step.release;
    if (this.pending?.key === key) {
      this.pending.release += step.release;
      this.flush(out);
    } else if (deltas && step.release !== '' && text.last) {
      this.flush(out);
      this.add(out, text.kind.delta, withoutLogprobs({ ...text.last, delta: step.release }));
    }
    if (!step.blocked) return true;
    this.block(key, out);
    return false;
  }

  /** A text's `.done`: the text ends, and the event shows it as sent. */
  private done(item: NativeStreamEvent, kind: TextKind, out: NativeStreamEvent[]): void {
    const data = eventData(item);
    const whole = data?.[kind.field];
    if (!data || typeof whole !== 'string') return this.send(out, item);
    const key = keyOf(kind, data);
    let text = this.texts.get(key);
    const streamed = text !== undefined;
    if (!text) {
      // No deltas came (an upstream that sends the text whole): the `.done` is checked whole.
      text = this.text(key, kind);
      const step = this.step(kind, text.guard.push(whole));
      text.sent = step.release;
      if (step.blocked) return this.block(key, out);
    }
    if (!this.endText(key, text, out, streamed)) return;
    this.flush(out);
    if (text.sent === whole) this.emit(out, item);
    else this.emit(out, item, withoutLogprobs({ ...data, [kind.field]: text.sent }));
  }

  private partDone(item: NativeStreamEvent, type: string, out: NativeStreamEvent[]): void {
    const data = eventData(item);
    this.flush(out);
    if (!data || !isRecord(data.part)) return this.emit(out, item);
    const summary = type === 'response.reasoning_summary_part.done';
    const key = textKey(Number(data.output_index), summary ? 's' : 'c', Number(summary ? data.summary_index : data.content_index));
    const field = summary ? (typeof data.part.text === 'string' ? 'text' : null) : partField(data.part);
    const text = field ? this.texts.get(key) : undefined;
    if (!field || !text || text.sent === data.part[field]) return this.emit(out, item);
    this.emit(out, item, { ...data, part: withoutLogprobs({ ...data.part, [field]: text.sent }) });
  }

  /** An item's `.done`: its texts end (an upstream may leave out their own `.done`), and it shows them as sent. */
  private itemDone(item: NativeStreamEvent, out: NativeStreamEvent[]): void {
    const data = eventData(item);
    if (!data) return this.send(out, item);
    const index = Number(data.output_index);
    for (const [key, text] of this.texts) if (key.startsWith(`${index}/`) && !this.endText(key, text, out, true)) return;
    this.flush(out);
    const shown = itemShowing(data.item, index, (key) => this.texts.get(key)?.sent);
    this.finished.set(index, shown ?? (isRecord(data.item) ? data.item : {}));
    if (shown) this.emit(out, item, { ...data, item: shown });
    else this.emit(out, item);
  }

  /** The upstream's final event: every text ends, and its Response shows them as sent. */
  private final(item: NativeStreamEvent, out: NativeStreamEvent[]): void {
    for (const [key, text] of this.texts) if (!this.endText(key, text, out, true)) return this.close(out, eventData(item)?.response);
    this.flush(out);
    const data = eventData(item);
    const response = data && isRecord(data.response) ? data.response : null;
    this.ended = true;
    if (!data || !response || !Array.isArray(response.output)) return this.emit(out, item);
    let changed = false;
    const output = response.output.map((entry: unknown, index) => {
      const shown = itemShowing(entry, index, (key) => this.texts.get(key)?.sent);
      if (shown) changed = true;
      return shown ?? entry;
    });
    if (changed) this.emit(out, item, { ...data, response: { ...response, output } });
    else this.emit(out, item);
  }

  /** A rule blocked `key`'s text: its held delta (the safe text before the match) went out; nothing more of the answer does. */
  private block(key: string, out: NativeStreamEvent[]): void {
    this.flush(out);
    this.refused = key;
  }

  /** Sends an event after what is held. */
  private send(out: NativeStreamEvent[], item: NativeStreamEvent): void {
    this.flush(out);
    this.emit(out, item);
  }

  /**
   * Closes a blocked answer in the Responses API's terms: the blocked text's `.done` and its part's, its item's
   * `.done` (status `incomplete`), then `response.incomplete` (content_filter) with the items finished before it,
   * that item, and the upstream's usage (`final`, or the Response begun when the upstream stopped short).
   */
  private close(out: NativeStreamEvent[], final: unknown): void {
    this.ended = true;
    const key = this.refused as string;
    const text = this.texts.get(key);
    const index = Number(key.slice(0, key.indexOf('/')));
    const begun = this.added.get(index) ?? {};
    const item = this.itemSoFar(index, begun);
    const where = key.slice(key.indexOf('/') + 1);
    const partIndex = Number(where.slice(1));
    if (text) {
      const at = text.kind.where === 'c' ? { content_index: partIndex } : text.kind.where === 's' ? { summary_index: partIndex } : {};
      const extra = text.kind.delta === 'response.output_text.delta' ? { logprobs: [] } : {};
      this.add(out, text.kind.done, { item_id: begun.id, output_index: index, ...at, [text.kind.field]: text.sent, ...extra });
      const part = this.parts.get(key);
      if (part && text.kind.where === 'c') this.add(out, 'response.content_part.done', { item_id: begun.id, output_index: index, content_index: partIndex, part: { ...part, [text.kind.field]: text.sent } });
      if (part && text.kind.where === 's') this.add(out, 'response.reasoning_summary_part.done', { item_id: begun.id, output_index: index, summary_index: partIndex, part: { ...part, text: text.sent } });
    }
    this.add(out, 'response.output_item.done', { output_index: index, item });
    const before = [...this.finished].filter(([at]) => at < index).sort(([a], [b]) => a - b).map(([, done]) => done);
    const response = isRecord(final) ? final : (this.created ?? {});
    this.add(out, 'response.incomplete', { response: { ...response, status: 'incomplete', incomplete_details: { reason: 'content_filter' }, output: [...before, item] } });
  }

  /** A blocked item as far as it went out: its parts' or arguments' text as sent, status `incomplete`. */
  private itemSoFar(index: number, begun: Json): Json {
    const sent = (key: string): string => this.texts.get(key)?.sent ?? '';
    if (begun.type === 'function_call') return { ...begun, status: 'incomplete', arguments: sent(textKey(index, 'a')) };
    if (begun.type === 'custom_tool_call') return { ...begun, status: 'incomplete', input: sent(textKey(index, 'a')) };
    const partsOf = (where: 's' | 'c'): Json[] => {
      const parts: Json[] = [];
      for (let at = 0; this.parts.has(textKey(index, where, at)); at++) {
        const key = textKey(index, where, at);
        const part = this.parts.get(key) as Json;
        const field = where === 's' ? 'text' : partField(part);
        parts.push(field && this.texts.has(key) ? withoutLogprobs({ ...part, [field]: sent(key) }) : part);
      }
      return parts;
    };
    const content = partsOf('c');
    if (begun.type === 'reasoning') return { ...begun, summary: partsOf('s'), ...(content.length > 0 ? { content } : {}) };
    return { ...begun, status: 'incomplete', content };
  }

  /** Sends an upstream event: as it came (renumbered when the gateway added events before it), or as rewritten (`data`). */
  private emit(out: NativeStreamEvent[], item: NativeStreamEvent, data?: Json): void {
    let text: string;
    if (data) text = JSON.stringify(typeof data.sequence_number === 'number' && this.shift !== 0 ? { ...data, sequence_number: data.sequence_number + this.shift } : data);
    else text = this.shift === 0 ? item.data : item.data.replace(SEQUENCE, (_match, number: string) => `"sequence_number":${Number(number) + this.shift}`);
    out.push(text === item.data ? item : { event: item.event, data: text });
    this.lastData = text;
  }

  /** Sends an event of the gateway's own, numbered after the last one sent. */
  private add(out: NativeStreamEvent[], type: string, fields: Json): void {
    const last = SEQUENCE.exec(this.lastData);
    const data = JSON.stringify({ type, ...fields, sequence_number: last ? Number(last[1]) + 1 : 0 });
    out.push({ event: type, data });
    this.lastData = data;
    this.shift++;
  }
}

/**
 * A stream's events with its end made a content filter's (a JSON schema block, judged once the text went out): its
 * `response.completed` becomes `response.incomplete` with `incomplete_details.reason: "content_filter"`, its output
 * and usage as they were; every other event is kept.
 */
export function contentFilteredEvents(events: readonly NativeStreamEvent[]): NativeStreamEvent[] {
  return events.map((item) => {
    if (typeOf(item) !== 'response.completed') return item;
    const data = eventData(item);
    if (!data || !isRecord(data.response)) return item;
    const response = { ...data.response, status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
    return { event: 'response.incomplete', data: JSON.stringify({ ...data, type: 'response.incomplete', response }) };
  });
}
