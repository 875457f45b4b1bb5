import { isRecord } from './is-record.js';

/**
 * Whether `choices` has the shape every stage walks in an answer: an array of objects whose `message` (a whole
 * answer's) or `delta` (a chunk's) is absent or an object, with `tool_calls` absent or a list of objects. Spend, the
 * cache, the request log and the dialects read answers in their own subscribers; an answer of another shape is
 * stopped where it enters the pipeline (an upstream's body, a plugin's event) with an error of that request.
 */
export function isChoiceList(choices: unknown, part: 'message' | 'delta'): boolean {
  if (!Array.isArray(choices)) return false;
  for (const choice of choices) {
    if (!isRecord(choice)) return false;
    const content = choice[part];
    if (content === undefined || content === null) continue;
    if (!isRecord(content)) return false;
    const calls = content.tool_calls;
    if (calls !== undefined && calls !== null && !(Array.isArray(calls) && calls.every(isRecord))) return false;
  }
  return true;
}
