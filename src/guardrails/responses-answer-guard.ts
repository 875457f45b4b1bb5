import type { TextScanner } from './request-guard.js';
import { itemShowing, itemTexts } from './responses-texts.js';
import type { Finding } from './types.js';

type Json = Record<string, unknown>;

export interface GuardedResponse {
  /** The Response the client may have: the upstream's own object when nothing changed. */
  body: Json;
  /** What the rules found, to report (the block alone when one stopped the answer). */
  findings: Finding[];
  blocked: Finding | null;
}

/**
 * Output rules on a whole Responses API answer passed through as the upstream wrote it: each text of its output
 * items (a message's output_text and refusal, a function call's arguments, a reasoning summary) is checked on its
 * own and redacted in place; every other item and field (reasoning's encrypted content, built-in tools' calls,
 * annotations, usage, fields tollgate does not know) stays as it came. A block ends the answer where the blocked item
 * begins, as OpenAI ends one its content filter stopped: `status: "incomplete"`, `incomplete_details.reason:
 * "content_filter"`, the items before it kept (a stream sends them before the block is known), its usage kept.
 */
export function guardResponseBody(body: Json, scanner: TextScanner): GuardedResponse {
  const output: unknown[] = Array.isArray(body.output) ? body.output : [];
  const findings: Finding[] = [];
  const kept: unknown[] = [];
  let changed = false;
  for (const [index, item] of output.entries()) {
    const shown = new Map<string, string>();
    for (const [key, text] of itemTexts(item, index)) {
      const found = scanner.scan(text);
      const blocked = found.find((finding) => finding.action === 'block');
      if (blocked) return { body: { ...body, status: 'incomplete', incomplete_details: { reason: 'content_filter' }, output: kept }, findings: [blocked], blocked };
      for (const finding of found) findings.push(finding);
      if (found.some((finding) => finding.action === 'redact')) shown.set(key, scanner.redact(text, found));
    }
    const rewritten = shown.size > 0 ? itemShowing(item, index, (key) => shown.get(key)) : null;
    if (rewritten) changed = true;
    kept.push(rewritten ?? item);
  }
  return { body: changed ? { ...body, output: kept } : body, findings, blocked: null };
}

/**
 * A whole Response a rule judged after the fact (a JSON schema block, a moderation model's): `incomplete` with
 * `content_filter`, as OpenAI ends an answer its filter stopped, the items of the types `withheld` left out (the
 * messages, whose text was judged, and for moderation the calls, as on chat); reasoning, other items and usage kept.
 */
export function contentFilteredResponse(body: Json, withheld: readonly string[] = ['message']): Json {
  const output: unknown[] = Array.isArray(body.output) ? body.output : [];
  const kept = output.filter((item) => !(typeof item === 'object' && item !== null && withheld.includes((item as Json).type as string)));
  return { ...body, status: 'incomplete', incomplete_details: { reason: 'content_filter' }, output: kept };
}
