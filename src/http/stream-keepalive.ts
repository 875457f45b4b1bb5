import type { ServerResponse } from 'node:http';
import type { RequestContext } from '../core/context.js';

/** Anthropic's own keep-alive, byte for byte as its API sends it during long generations; its SDKs skip it. */
export const ANTHROPIC_PING = 'event: ping\ndata: {"type": "ping"}\n\n';

/**
 * An SSE comment: every SSE parser skips it (the OpenAI SDK's decoder, the Google GenAI SDK's, which reads only
 * `data:` events, EventSource), as OpenAI-compatible servers and proxies send it.
 */
export const SSE_COMMENT = ': keep-alive\n\n';

/** Marks the answer as active now; the dialect calls it on each write of its own events. */
export type Touch = () => void;

/**
 * Keeps a streamed answer's connection alive while it is silent: a reasoning model may think for minutes before
 * (and between) its events, and a reverse proxy's or load balancer's idle timeout (nginx and AWS ALB 60 s,
 * Cloudflare 100 s) would cut the client off, which abandons the upstream call. After `settings.stream_keepalive_ms`
 * of silence `frame` goes out, again after each further interval of silence.
 *
 * Before the answer's headers, `open` (the dialect writing its 200 and event-stream headers) is called only while the
 * attempt under way has its upstream's 2xx and is generating (ctx.upstreamAnswering): not while an attempt connects,
 * nor after one failed, through the back-off wait before the next (the next attempt may still refuse with a status
 * the client's SDK acts on: a 429 or 5xx it retries, a 400). Those waits are bounded by first_byte_ms and the retry
 * policy. Once an upstream streams, only keep-alives, which no client counts as answer, precede its first event: the
 * call stage may still move on to another target (it does until an event was emitted), and the fallback's events
 * follow in the same response; a failure of every target then comes as the dialect's error event, as after any
 * started stream. Once the head went out, keep-alives go on through such a back-off too: the status is given, and
 * only the connection is left to keep.
 *
 * The frame is written straight to the socket, never through the pipeline: request logs, guardrails, the cache and
 * token counts see only the upstream's events. A full socket buffer (a client not reading) gets no keep-alive.
 * Returns the dialect's `Touch`, or null when there is nothing to keep alive (not a stream, or the setting is 0).
 */
export function streamKeepAlive(res: ServerResponse, ctx: RequestContext, frame: string, open: () => void): Touch | null {
  // Read per request from its config snapshot, so a changed setting applies from the next request on.
  const interval = ctx.config.settings.streamKeepaliveMs;
  if (!ctx.stream || interval <= 0) return null;
  let last = performance.now();
  let timer: NodeJS.Timeout | null = null;
  const arm = (ms: number): void => {
    timer = setTimeout(beat, ms);
    timer.unref();
  };
  function beat(): void {
    timer = null;
    if (res.writableEnded || res.destroyed) return;
    const wait = interval - (performance.now() - last);
    // Something was written since: wait out the rest of an interval from then (a timer may fire a millisecond early).
    if (wait > 1) return arm(wait);
    if (!res.headersSent && ctx.upstreamAnswering) {
      // Only once the answering upstream has itself been silent a whole interval: one that answered 2xx and broke off
      // at once (a failure a moment behind its headers, which a loaded event loop may hear only after this timer)
      // must not open the answer, whose next attempt may still refuse with a status of its own.
      const answering = performance.now() - ctx.upstreamAnsweredAt;
      if (answering < interval - 1) return arm(interval - answering);
      // The head may hold a value Node refuses (a plugin's header with a CR/LF): thrown here, in a timer outside the
      // answer's guards, it would end the process. The keep-alives stop instead; the answer's own first write meets
      // the same refusal where it is caught, and this request alone fails with its dialect's 500.
      try {
        open();
      } catch {
        return;
      }
    }
    if (res.headersSent) {
      if (!res.writableNeedDrain) res.write(frame);
      last = performance.now();
    }
    arm(interval);
  }
  arm(interval);
  // 'close' comes after the end too: no timer outlives the answer, holding it.
  res.once('close', () => {
    if (timer) clearTimeout(timer);
    timer = null;
  });
  return () => {
    last = performance.now();
  };
}
