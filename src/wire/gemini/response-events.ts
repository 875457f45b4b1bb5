import type { NativeStreamEvent } from '../../core/canonical.js';
import { eventData } from '../../core/event-data.js';
import { isRecord } from '../../core/is-record.js';
import type { Json } from './shapes.js';

/**
 * A GenerateContentResponse and its stream, each made from the other, for a cached native answer asked for in the
 * other shape. Gemini streams GenerateContentResponse objects, so a whole response is a valid stream of one event.
 * A stream becomes one response as the pieces add up: each candidate's parts in order (consecutive text pieces of
 * the same kind joined, as Gemini answers them whole; a thought signature stays on the text it closes), the
 * candidate's other fields (finish reason, safety ratings, grounding metadata) as the last piece that had them gave
 * them, citations collected from every piece, and the top-level fields (usage, model version) from the last piece.
 */

/** The stream of one whole response: a single event. */
export function responseEvents(response: Json): NativeStreamEvent[] {
  return [{ event: '', data: JSON.stringify(response) }];
}

/** A text part that can take the next piece's text: plain text (or thought text), and no signature yet. */
function joinable(part: Json): boolean {
  for (const key in part) if (key !== 'text' && key !== 'thought') return false;
  return typeof part.text === 'string';
}

/** Whether `next` continues the text of `last` (same kind, nothing but text and perhaps the signature closing it). */
function continues(last: Json, next: Json): boolean {
  if (!joinable(last) || typeof next.text !== 'string' || last.thought !== next.thought) return false;
  for (const key in next) if (key !== 'text' && key !== 'thought' && key !== 'thoughtSignature') return false;
  return true;
}

function addParts(parts: Json[], pieces: unknown[]): void {
  for (const piece of pieces) {
    if (!isRecord(piece)) continue;
    const last = parts[parts.length - 1];
    if (last && continues(last, piece)) {
      last.text = `${last.text as string}${piece.text as string}`;
      if (piece.thoughtSignature !== undefined) last.thoughtSignature = piece.thoughtSignature;
      continue;
    }
    parts.push({ ...piece });
  }
}

function addCandidate(candidate: Json, piece: Json): void {
  for (const key in piece) {
    const value = piece[key];
    if (key === 'content' && isRecord(value)) {
      const content = isRecord(candidate.content) ? candidate.content : (candidate.content = { parts: [] });
      const { parts, ...rest } = value;
      Object.assign(content, rest);
      if (!Array.isArray(content.parts)) content.parts = [];
      if (Array.isArray(parts)) addParts(content.parts as Json[], parts);
    } else if (key === 'citationMetadata' && isRecord(value) && isRecord(candidate.citationMetadata)) {
      const had = candidate.citationMetadata;
      const name = Array.isArray(value.citationSources) ? 'citationSources' : 'citations';
      candidate.citationMetadata = { ...had, ...value, [name]: [...(Array.isArray(had[name]) ? had[name] : []), ...(Array.isArray(value[name]) ? value[name] : [])] };
    } else candidate[key] = value;
  }
}

/** The whole response a stream's events make; null when an event is not a JSON object (the caller then has none). */
export function eventsResponse(events: readonly NativeStreamEvent[]): Json | null {
  if (events.length === 0) return null;
  const response: Json = {};
  const candidates: Json[] = [];
  for (const item of events) {
    const data = eventData(item);
    if (data === null) return null;
    for (const key in data) {
      const value = data[key];
      if (key !== 'candidates') {
        response[key] = value;
        continue;
      }
      response.candidates = candidates;
      if (!Array.isArray(value)) continue;
      value.forEach((piece, position) => {
        if (!isRecord(piece)) return;
        const index = typeof piece.index === 'number' ? piece.index : position;
        let candidate = candidates.find((each) => (typeof each.index === 'number' ? each.index : candidates.indexOf(each)) === index);
        if (!candidate) candidates.push((candidate = {}));
        addCandidate(candidate, piece);
      });
    }
  }
  return response;
}
