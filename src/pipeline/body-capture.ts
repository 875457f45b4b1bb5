import type { ResponseEvent } from '../core/canonical.js';
import type { LogBodySettings } from '../core/config.js';
import type { RequestContext } from '../core/context.js';
import { redactSecrets } from '../core/redact-secrets.js';

/** Redacts, then cuts to `maxBytes` of UTF-8 (redacting first, so a cut never leaves half a secret showing). */
export function keptBody(text: string, settings: LogBodySettings): string {
  return cutToBytes(redactSecrets(text, settings.redact), settings.maxBytes, null);
}

/** `text` cut to `maxBytes` of UTF-8 on a character boundary, saying that it was cut and by how much. */
function cutToBytes(text: string, maxBytes: number, leftOut: number | null): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes && leftOut === null) return text;
  const kept = bytes.subarray(0, maxBytes).toString('utf8').replace(/\uFFFD$/, '');
  const cut = bytes.length - Math.min(maxBytes, bytes.length);
  return leftOut === null ? `${kept}…[truncated ${cut} bytes]` : `${kept}…[truncated over ${cut + leftOut} bytes]`;
}

/**
 * Characters kept before the place where a body was first serialised in part: a secret that starts before the cut
 * is read whole (a secret cut in two could lose its pattern's shape and be kept in part).
 */
const CUT_MARGIN = 1_024;
/** Marks where serialising first left something out (a private-use character, never escaped by JSON). */
const LEFT_OUT = '\uE000tollgate-left-out\uE000';

/**
 * `value` as JSON, redacted and cut as `keptBody` cuts `JSON.stringify(value)`, without serialising and scanning
 * all of a large body: a request with a base64 image (up to `max_body_bytes`) or an answer of thousands of embedding
 * vectors kept a few KiB but was serialised and scanned whole on the event loop as the request ended (50-100 ms for a
 * 10 MiB image). Strings and arrays past a budget of characters are left out, and the first place where something
 * was is marked; when redaction shortened the text before that mark so much that the cut would come too close to it,
 * the whole body is serialised as before.
 */
export function keptJson(value: unknown, settings: LogBodySettings): string {
  const budget = 2 * (settings.maxBytes + CUT_MARGIN);
  let used = 0;
  let leftOut = 0;
  const text = JSON.stringify(value, (_key, item: unknown) => {
    const room = Math.max(0, budget - used);
    if (typeof item === 'string') {
      used += item.length + 3;
      // Each string is redacted as the text it is, before JSON escapes it: serialised, a key after a newline follows
      // the `n` of `\n`, which a secret pattern's word-boundary look-behind takes for part of a word.
      if (item.length <= room) return redactSecrets(item, settings.redact);
      const kept = item.slice(0, room);
      const first = leftOut === 0;
      leftOut += Buffer.byteLength(item) - Buffer.byteLength(kept);
      return first ? `${redactSecrets(kept, settings.redact)}${LEFT_OUT}` : redactSecrets(kept, settings.redact);
    }
    used += 2;
    if (!Array.isArray(item) || item.length <= room) return item;
    const first = leftOut === 0;
    // Each element left out would have taken two characters at least.
    leftOut += 2 * (item.length - room);
    return first ? [...item.slice(0, room), LEFT_OUT] : item.slice(0, room);
  }) as string | undefined;
  if (text === undefined) return '';
  if (leftOut === 0) return keptBody(text, settings);
  const redacted = redactSecrets(text, settings.redact);
  const mark = redacted.indexOf(LEFT_OUT);
  // The cut must fall well before the first place something was left out, else nothing can be kept without it.
  if (mark < 0 || Buffer.byteLength(redacted.slice(0, Math.max(0, mark - CUT_MARGIN))) < settings.maxBytes) return keptBody(JSON.stringify(value, redactingStrings(settings)) ?? '', settings);
  return cutToBytes(redacted, settings.maxBytes, leftOut);
}

/** A JSON.stringify replacer that redacts every string value as the text it is (see keptJson). */
function redactingStrings(settings: LogBodySettings): (key: string, item: unknown) => unknown {
  return (_key, item) => (typeof item === 'string' ? redactSecrets(item, settings.redact) : item);
}

/**
 * Collects what the client got, for the request log when `settings.log_bodies.enabled`: a whole answer as it
 * went out, or a stream's text and tool-call arguments put together. Collection stops past a few times the cap.
 */
export class BodyCapture {
  private readonly parts: string[] = [];
  private size = 0;
  private whole: unknown = null;
  private readonly tools = new Map<number, { name: string; arguments: string }>();
  private finishReason: string | null = null;

  constructor(private readonly settings: LogBodySettings) {}

  add(event: ResponseEvent): void {
    if (event.kind === 'completion') this.whole = event.native?.body ?? event.completion;
    else if (event.kind === 'embeddings') this.whole = event.response;
    else {
      if (this.size > this.settings.maxBytes * 4) return;
      for (const choice of event.chunk.choices as Array<{ delta?: unknown; finish_reason?: string | null }>) {
        const delta = (choice.delta ?? {}) as { content?: unknown; tool_calls?: Array<{ index?: number; function?: { name?: string; arguments?: string } }> };
        if (typeof delta.content === 'string') {
          this.parts.push(delta.content);
          this.size += delta.content.length;
        }
        for (const call of delta.tool_calls ?? []) {
          const tool = this.tools.get(call.index ?? 0) ?? { name: '', arguments: '' };
          // Whole in whichever delta has it (some providers repeat it in every delta).
          if (call.function?.name) tool.name = call.function.name;
          tool.arguments += call.function?.arguments ?? '';
          this.size += (call.function?.arguments ?? '').length;
          this.tools.set(call.index ?? 0, tool);
        }
        if (choice.finish_reason) this.finishReason = choice.finish_reason;
      }
    }
  }

  /** The request as the client sent it (its own body when native) and the answer, redacted and capped. */
  bodies(ctx: RequestContext): { request: string; response: string } {
    const response =
      this.whole !== null
        ? this.whole
        : {
            content: this.parts.join(''),
            ...(this.tools.size > 0 ? { tool_calls: [...this.tools.values()] } : {}),
            finish_reason: this.finishReason,
          };
    return { request: keptJson(ctx.native?.body ?? ctx.request, this.settings), response: keptJson(response, this.settings) };
  }
}
