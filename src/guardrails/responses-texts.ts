import { isRecord } from '../core/is-record.js';

type Json = Record<string, unknown>;

/**
 * Where a Responses API answer keeps the texts output rules read: a message's content parts (`output_text` text, a
 * `refusal`), a reasoning item's raw `reasoning_text` parts, a function call's `arguments`, a custom tool call's `input`, a reasoning item's summary parts. Each is a text of its own, named by
 * its item's output index and its part: `3/c0` (content part 0), `3/s1` (summary part 1), `3/a` (arguments). Other
 * items (built-in tools' calls, reasoning's encrypted content) hold nothing the rules read and are never touched.
 */
export function textKey(outputIndex: number, where: 'c' | 's' | 'a', index = 0): string {
  return where === 'a' ? `${outputIndex}/a` : `${outputIndex}/${where}${index}`;
}

/**
 * The field of a content part that holds its text (`text` of output_text and of a reasoning item's reasoning_text,
 * `refusal` of a refusal), or null.
 */
export function partField(part: unknown): 'text' | 'refusal' | null {
  if (!isRecord(part)) return null;
  if ((part.type === 'output_text' || part.type === 'reasoning_text') && typeof part.text === 'string') return 'text';
  if (part.type === 'refusal' && typeof part.refusal === 'string') return 'refusal';
  return null;
}

/** Every text of an output item, as [key, text] (see textKey). */
export function itemTexts(item: unknown, outputIndex: number): Array<[string, string]> {
  if (!isRecord(item)) return [];
  const out: Array<[string, string]> = [];
  // A message's parts, and a reasoning item's raw reasoning (reasoning_text parts, from open-weight models).
  if ((item.type === 'message' || item.type === 'reasoning') && Array.isArray(item.content)) {
    item.content.forEach((part: unknown, index) => {
      const field = partField(part);
      if (field) out.push([textKey(outputIndex, 'c', index), (part as Json)[field] as string]);
    });
  }
  if (item.type === 'function_call' && typeof item.arguments === 'string') {
    out.push([textKey(outputIndex, 'a'), item.arguments]);
  } else if (item.type === 'custom_tool_call' && typeof item.input === 'string') {
    out.push([textKey(outputIndex, 'a'), item.input]);
  } else if (item.type === 'reasoning' && Array.isArray(item.summary)) {
    item.summary.forEach((part: unknown, index) => {
      if (isRecord(part) && typeof part.text === 'string') out.push([textKey(outputIndex, 's', index), part.text]);
    });
  }
  return out;
}

/**
 * An output item with the texts `shown` gives (by key) in place of its own, every other field kept; null when none
 * differs, so the caller can send the upstream's own bytes. A redacted output_text's annotations and logprobs point
 * into or spell the text as the model wrote it: logprobs go, annotations stay (their URLs are the citation).
 */
export function itemShowing(item: unknown, outputIndex: number, shown: (key: string) => string | undefined): Json | null {
  if (!isRecord(item)) return null;
  let content: unknown[] | null = null;
  if ((item.type === 'message' || item.type === 'reasoning') && Array.isArray(item.content)) {
    let changed = false;
    const parts = item.content.map((part: unknown, index) => {
      const field = partField(part);
      const text = field ? shown(textKey(outputIndex, 'c', index)) : undefined;
      if (!field || text === undefined || text === (part as Json)[field]) return part;
      changed = true;
      return withoutLogprobs({ ...(part as Json), [field]: text });
    });
    if (changed) content = parts;
  }
  if (item.type === 'message') return content ? { ...item, content } : null;
  if (item.type === 'function_call' && typeof item.arguments === 'string') {
    const text = shown(textKey(outputIndex, 'a'));
    return text === undefined || text === item.arguments ? null : { ...item, arguments: text };
  }
  if (item.type === 'custom_tool_call' && typeof item.input === 'string') {
    const text = shown(textKey(outputIndex, 'a'));
    return text === undefined || text === item.input ? null : { ...item, input: text };
  }
  if (item.type === 'reasoning') {
    let changed = false;
    const summary = !Array.isArray(item.summary)
      ? item.summary
      : item.summary.map((part: unknown, index) => {
          const text = isRecord(part) && typeof part.text === 'string' ? shown(textKey(outputIndex, 's', index)) : undefined;
          if (text === undefined || text === (part as Json).text) return part;
          changed = true;
          return { ...(part as Json), text };
        });
    if (!changed && !content) return null;
    return { ...item, ...(changed ? { summary } : {}), ...(content ? { content } : {}) };
  }
  return null;
}

/** A part or event without the logprobs that spell its text as the model wrote it (an empty list, as OpenAI sends none). */
export function withoutLogprobs(value: Json): Json {
  return Array.isArray(value.logprobs) && value.logprobs.length > 0 ? { ...value, logprobs: [] } : value;
}
