import type { ServerResponse } from 'node:http';
import type { Observable, Observer } from 'rxjs';
import type { ResponseEvent } from '../core/canonical.js';
import type { RequestContext } from '../core/context.js';
import type { Log } from '../log.js';
import type { RenderedError } from './render-error.js';
import { gatewayError, INTERNAL_MESSAGE } from '../core/errors.js';
import { streamKeepAlive, type Touch } from './stream-keepalive.js';

/**
 * Headers of every event-stream answer, whatever the dialect. The routes add them to the request's own headers (a
 * fresh object) with `Object.assign`, not a spread after them (see core/with-fields.ts: 2-3 µs for these three).
 */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  // Tells buffering reverse proxies (nginx) to pass events through as they come.
  'x-accel-buffering': 'no',
};

/** Headers of a whole JSON answer (added as SSE_HEADERS are). */
export const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

/**
 * An event stream's writer: the texts written within one tick (the events decoded from one upstream read) are
 * joined and go out in one `res.write` at the tick's end, or sooner when they would fill the socket's buffer (see
 * backedUp) or the answer ends (its error or complete, after which texts go out at once: the dialect then ends the
 * response with writes of its own, which must follow them). Node frames every write as an HTTP chunk of its own,
 * four buffers a write: a 22-event read written event by event (corked, as before) made one writev of some ninety
 * buffers after 22 passes through Node's write path (bench/stream-writes.ts).
 * Each flush tells the stream's keep-alive (see stream-keepalive.ts), when it has one, that the answer is not silent.
 */
export class TickWriter {
  private pending = '';
  private scheduled = false;
  /** Whether any of the answer's text was given to write (keep-alives go around the writer and do not count). */
  wrote = false;
  /** Set once the answer ends: texts are written at once, since the dialect's own end follows them directly. */
  private ending = false;
  private readonly flushLater = (): void => this.flush();

  constructor(
    private readonly res: ServerResponse,
    private readonly touch: Touch | null = null,
  ) {}

  write(text: string): void {
    if (text !== '') this.wrote = true;
    this.pending += text;
    if (this.ending) return this.flush();
    if (this.scheduled) return;
    this.scheduled = true;
    process.nextTick(this.flushLater);
  }

  /** Writes what is pending now. */
  flush(): void {
    this.scheduled = false;
    const text = this.pending;
    if (text === '') return;
    this.pending = '';
    this.touch?.();
    // Nothing follows the answer's end (serveAnswer ends the writer before the dialect ends it); a socket destroyed meanwhile
    // drops the text, as it would have dropped a write made before.
    if (!this.res.writableEnded) this.res.write(text);
  }

  /**
   * Whether the client is behind: the socket's buffer is full. A tick's text that would fill it is written now rather
   * than at the tick's end, so that the check sees it and the socket's 'drain' tells when the client has read it.
   * (Flushing at every check would undo the joining: undici hands the call stage each HTTP chunk of a read, an event
   * each, and the call stage checks after every one.)
   */
  backedUp(): boolean {
    const { res } = this;
    if (this.pending.length > 0 && this.pending.length + res.writableLength >= res.writableHighWaterMark) this.flush();
    return res.writableNeedDrain && !res.destroyed;
  }

  /** Writes what is pending and, from now on, every text at once: the answer is ending (its error or complete). */
  end(): void {
    this.ending = true;
    this.flush();
  }
}

/** A streamed answer's writer whose status and headers go out with its first bytes (see lazyStreamWriter). */
export interface LazyStreamWriter {
  /** Whether the 200 and the headers went out (by `send`, or by a keep-alive once the upstream answered). */
  readonly started: boolean;
  /** Writes the text (nothing for an empty one), the status and headers first if they have not gone yet. */
  send(text: string): void;
  /** The writer of the events, for serveAnswer (whose backpressure check counts what it holds, and which ends it). */
  readonly writes: TickWriter;
}

/**
 * The writer of an answer streamed in a dialect's own events: the 200 goes out with the first event, so an attempt
 * that fails before it can still answer with a status; writes within a tick go out together (TickWriter),
 * and a silent stream gets `keepAliveFrame` (null: a framing with no comment syntax, no keep-alive).
 */
export function lazyStreamWriter(res: ServerResponse, ctx: RequestContext, headers: () => Record<string, string>, keepAliveFrame: string | null): LazyStreamWriter {
  const open = (): void => {
    res.writeHead(200, headers());
    writer.started = true;
  };
  const writes = new TickWriter(res, keepAliveFrame === null ? null : streamKeepAlive(res, ctx, keepAliveFrame, open));
  const writer = {
    started: false,
    writes,
    send(text: string): void {
      if (text === '') return;
      if (!writer.started) open();
      writes.write(text);
    },
  };
  return writer;
}

/** Resolves when the socket buffer has room again, or the client is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise<void>((ready) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      ready();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** The context's backpressure check once its answer is written (and before it starts). */
const NO_BACKPRESSURE = (): null => null;

/** What the context says of the client once its connection is gone: whatever was emitted counts as received. */
const RECEIVED = (): boolean => true;

/**
 * The context's backpressure check while its answer is written: a closure over the response (and its writer) alone.
 * The text the writer holds for the tick's end counts (see TickWriter.backedUp).
 */
function readiness(res: ServerResponse, writes: TickWriter | null): () => Promise<void> | null {
  if (writes === null) return () => (res.writableNeedDrain && !res.destroyed ? drained(res) : null);
  return () => (writes.backedUp() ? drained(res) : null);
}

/** Writes a whole error answer with the request's own headers. */
export function writeRenderedError(res: ServerResponse, headers: Record<string, string>, rendered: RenderedError): void {
  res.writeHead(rendered.status, Object.assign({}, headers, rendered.headers));
  res.end(rendered.body);
}

/**
 * The observer with every callback guarded: a writer that throws (a header value Node refuses, a rendering bug)
 * fails this one answer (the dialect's own 500 if nothing was sent yet, else a cut connection) and is logged, instead of
 * escaping into rxjs, which rethrows it outside any request and so would end the process for every client.
 */
function guarded(
  res: ServerResponse,
  ctx: RequestContext,
  log: Log,
  observer: Partial<Observer<ResponseEvent>>,
  stop: () => void,
  writes: TickWriter | null,
): Partial<Observer<ResponseEvent>> {
  let faulted = false;
  const fault = (err: unknown): void => {
    log.error({ err, requestId: ctx.id }, 'writing the answer failed; this request is ended');
    // Before stop(): its unsubscribe ends the request, and the terminal event must say it failed here (500), not
    // that the pipeline answered (200) or that the client left (499).
    ctx.answerFailed ??= gatewayError('internal_error', INTERNAL_MESSAGE);
    stop();
    if (faulted || res.headersSent) {
      res.destroy();
      return;
    }
    faulted = true;
    // The dialect's own 500, without the stage-set headers (one of them may be what Node refused).
    for (const name of Object.keys(ctx.responseHeaders)) delete ctx.responseHeaders[name];
    try {
      observer.error?.(gatewayError('internal_error', INTERNAL_MESSAGE));
    } catch {
      res.destroy();
    }
  };
  return {
    next(event) {
      try {
        observer.next?.(event);
      } catch (err) {
        fault(err);
      }
    },
    // The dialect ends the answer in these two, writing to the response directly: the events held for the tick's end go first.
    error(err: unknown) {
      try {
        writes?.end();
        observer.error?.(err);
      } catch (thrown) {
        fault(thrown);
      }
    },
    complete() {
      try {
        writes?.end();
        observer.complete?.();
      } catch (err) {
        fault(err);
      }
    },
  };
}

/**
 * What every dialect's writer shares: backpressure (the producer awaits `ctx.clientReady` when the socket buffer
 * is full), the subscription to the pipeline's answer, and the hang-up: a client that leaves before the answer
 * ended unsubscribes, which aborts the upstream call. Resolves when the connection closes. `writes`: the stream's
 * writer, whose held text the backpressure check counts, ended (see TickWriter.end) before the observer's error or
 * complete, which end the answer.
 */
export function serveAnswer(
  res: ServerResponse,
  ctx: RequestContext,
  answer: Observable<ResponseEvent>,
  log: Log,
  observer: Partial<Observer<ResponseEvent>>,
  writes: TickWriter | null = null,
): Promise<void> {
  ctx.clientReady = readiness(res, writes);
  if (writes !== null) ctx.clientReceived = () => writes.wrote;
  return new Promise<void>((resolve) => {
    let stopped = false;
    let subscription: { unsubscribe(): void } | null = null;
    const stop = (): void => {
      stopped = true;
      subscription?.unsubscribe();
    };
    subscription = answer.subscribe(guarded(res, ctx, log, observer, stop, writes));
    // A fault during the synchronous part of subscribe happened before `subscription` was set.
    if (stopped) subscription.unsubscribe();
    const hangUp = (): void => {
      if (!res.writableFinished) subscription.unsubscribe();
      // The context outlives the answer (the request's after-work, its terminal event's subscribers): it must not
      // keep the response, and through it the whole request, reachable. Measured, it did: every request's HTTP
      // objects survived the young-generation collections that came after it (bench/RESULTS.md).
      ctx.clientReady = NO_BACKPRESSURE;
      ctx.clientReceived = RECEIVED;
      resolve();
    };
    // An answer held back behind earlier ones on a pipelined connection has no socket yet (Node hands it the socket
    // once those are written), and its own 'close' can only come after that: meanwhile the connection tells whether
    // the client is still there. (Taking "no socket" for a client that left answered it never.)
    const socket = res.socket ?? res.req.socket;
    // The client may already be gone by the time the pipeline is subscribed.
    if (socket.destroyed) hangUp();
    else {
      res.once('close', hangUp);
      if (res.socket === null) {
        socket.once('close', hangUp);
        res.once('socket', () => socket.off('close', hangUp));
      }
    }
  });
}
