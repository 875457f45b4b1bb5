/**
 * The most of an MCP server's answer tollgate reads. The SDK parses an HTTP server's answer whole (a JSON body, or
 * each SSE event as the parser gathers it) with no limit: one huge tool result, from a server's bug or a hostile
 * server, would fill the gateway's memory and take every request down with it. The body is counted as it arrives
 * and cut off (the rest never read) once past the limit: a JSON body as a whole, an event stream event by event
 * (a long-lived stream may carry any number of small events).
 */

export { DEFAULT_MCP_MAX_ANSWER_BYTES as DEFAULT_MAX_ANSWER_BYTES } from '../core/mcp.js';

export class McpAnswerTooLarge extends Error {
  constructor(
    readonly server: string,
    readonly maxBytes: number,
  ) {
    super(`MCP server '${server}' answered more than ${maxBytes} bytes (its max_answer_bytes); the answer was not read`);
    this.name = 'McpAnswerTooLarge';
  }
}

const NULL_BODY = new Set([101, 204, 205, 304]);
const LF = 0x0a;
const CR = 0x0d;

/** Counts an event stream's bytes since its last event ended (an empty line, after LF, CR or CRLF line ends). */
class EventCounter {
  private bytes = 0;
  private lineStart = true;
  private afterCR = false;

  /** Whether the chunk takes an event past `maxBytes`. */
  over(chunk: Uint8Array, maxBytes: number): boolean {
    for (const byte of chunk) {
      if (byte === LF && this.afterCR) {
        this.afterCR = false;
        continue;
      }
      this.afterCR = byte === CR;
      if (byte === LF || byte === CR) {
        if (this.lineStart) this.bytes = 0;
        this.lineStart = true;
        continue;
      }
      this.lineStart = false;
      if (++this.bytes > maxBytes) return true;
    }
    return false;
  }
}

/**
 * The response with its body cut off past `maxBytes`: the body's reader gets `McpAnswerTooLarge`, the upstream body
 * is cancelled (its connection closed, nothing more read), and `exceeded` is told first, so a call can fail at once
 * rather than wait for an answer the SDK will never parse.
 */
export function limitAnswer(response: Response, maxBytes: number, server: string, exceeded: (err: McpAnswerTooLarge) => void): Response {
  const body = response.body;
  // A status that has no body (204, 304) cannot be given one, even an empty one.
  if (!body || NULL_BODY.has(response.status)) return response;
  const events = (response.headers.get('content-type') ?? '').toLowerCase().includes('text/event-stream') ? new EventCounter() : null;
  let total = 0;
  const limited = body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        total += chunk.byteLength;
        if (events ? events.over(chunk, maxBytes) : total > maxBytes) {
          const err = new McpAnswerTooLarge(server, maxBytes);
          exceeded(err);
          controller.error(err);
          return;
        }
        controller.enqueue(chunk);
      },
    }),
  );
  return new Response(limited, { status: response.status, statusText: response.statusText, headers: response.headers });
}
