import type { ResponseEvent } from '../core/canonical.js';
import type { LogBodySettings } from '../core/config.js';
import type { RequestContext } from '../core/context.js';
import { redactSecrets } from '../core/redact-secrets.js';

/** Redacts, then cuts to `maxBytes` of UTF-8 (redacting first, so a cut never leaves half a secret showing). */
export function keptBody(text: string, settings: LogBodySettings): string {
  const out = redactSecrets(text, settings.redact);
  const bytes = Buffer.from(out, 'utf8');
  if (bytes.length <= settings.maxBytes) return out;
  // Cut on a character boundary, and say that it was cut.
  return `${bytes.subarray(0, settings.maxBytes).toString('utf8').replace(/\uFFFD$/, '')}…[truncated ${bytes.length - settings.maxBytes} bytes]`;
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
    const request = JSON.stringify(ctx.native?.body ?? ctx.request);
    const response =
      this.whole !== null
        ? JSON.stringify(this.whole)
        : JSON.stringify({
            content: this.parts.join(''),
            ...(this.tools.size > 0 ? { tool_calls: [...this.tools.values()] } : {}),
            finish_reason: this.finishReason,
          });
    return { request: keptBody(request, this.settings), response: keptBody(response, this.settings) };
  }
}
