// Scripted behaviours: how a mode is chosen from a model name, and how an answer is delivered under each mode
// (delays, stalls, broken connections).
import type { ServerResponse } from 'node:http';
import type { HeaderMap } from './openai-headers.js';

export type UpstreamMode =
  | { kind: 'ok' }
  | { kind: 'error'; status: number; type?: string; code?: string | null; message?: string; headers?: Record<string, string> }
  | { kind: 'slow-headers'; delayMs: number }
  | { kind: 'slow-chunks'; delayMs: number }
  /** A stream's headers at once, then silence (a reasoning model thinking) before its first frame. */
  | { kind: 'silent-start'; delayMs: number }
  | { kind: 'stall-after'; chunks: number }
  | { kind: 'reset' }
  | { kind: 'break-after'; chunks: number }
  | { kind: 'bad-json' }
  /**
   * An answer that never ends: `bytes` of body (non-streamed: one JSON string that never closes; streamed: one SSE
   * `data:` line without a newline), written as fast as the reader takes it; `declare` sends a content-length.
   */
  | { kind: 'huge-body'; bytes: number; declare?: boolean }
  /**
   * A well-formed chat stream of `chunks` frames, each a content delta of `chunkBytes` letters (with `logprobs` log
   * probabilities when given), then `stop` and `[DONE]`; `Infinity` chunks for one that never ends (a model looping).
   * Written as fast as the reader takes it.
   */
  | { kind: 'long-stream'; chunkBytes: number; chunks: number; logprobs?: number }
  /** A whole answer as given: status, headers and body (an HTML error page, a long error message). */
  | { kind: 'raw'; status: number; headers?: Record<string, string>; body: string }
  /** Answers normally but reports this usage instead of the real one (implausible counts, for the cost stage's checks). */
  | { kind: 'usage'; usage: Record<string, unknown> }
  /** Answers with this text instead of the echo, streamed one piece per chunk (sub-word pieces, as real tokens are). */
  | { kind: 'reply'; pieces: string[]; /** A reasoning model's thinking ahead of the reply (Mistral's Magistral only). */ thinking?: string[] };

export const OK_MODE: UpstreamMode = { kind: 'ok' };

// An optional "provider/" or "provider:" prefix is tolerated so a gateway that forwards the model verbatim still scripts.
const MODEL_MODE = /^(?:.*[/:])?(?:error-(\d{3})|slow-headers-(\d+)|slow-chunks-(\d+)|stall-after-(\d+)|break-after-(\d+)|(reset)|(bad-json)|huge-body-(\d+)mb)$/;

/**
 * The mode a model name asks for, so out-of-process clients (benchmarks, curl) can script the upstream:
 * `error-<status>`, `slow-headers-<ms>`, `slow-chunks-<ms>`, `stall-after-<n>`, `break-after-<n>`, `reset`, `bad-json`, `huge-body-<n>mb`.
 */
export function modeFromModel(model: unknown): UpstreamMode | null {
  if (typeof model !== 'string') return null;
  const m = MODEL_MODE.exec(model);
  if (!m) return null;
  const [, status, slowHeaders, slowChunks, stall, brk, reset, , hugeMb] = m;
  if (hugeMb !== undefined) return { kind: 'huge-body', bytes: Number(hugeMb) * 1024 * 1024 };
  if (status !== undefined) return { kind: 'error', status: Number(status) };
  if (slowHeaders !== undefined) return { kind: 'slow-headers', delayMs: Number(slowHeaders) };
  if (slowChunks !== undefined) return { kind: 'slow-chunks', delayMs: Number(slowChunks) };
  if (stall !== undefined) return { kind: 'stall-after', chunks: Number(stall) };
  if (brk !== undefined) return { kind: 'break-after', chunks: Number(brk) };
  if (reset !== undefined) return { kind: 'reset' };
  return { kind: 'bad-json' };
}

/** One request/response pair as the delivery functions see it. */
export interface Exchange {
  readonly res: ServerResponse;
  /** False once the connection is gone, for whatever reason. */
  isOpen(): boolean;
  /** Waits ms; resolves false (early) if the connection closes meanwhile, so loops stop without leaking timers. */
  sleep(ms: number): Promise<boolean>;
  /**
   * Drops the connection from the server side mid-response, after what was already written has been sent
   * (not counted as a client close).
   */
  destroy(): void;
}

/** How many frames/parts to send before stalling or breaking; Infinity when the mode does neither. */
function cutoff(mode: UpstreamMode): number {
  return mode.kind === 'stall-after' || mode.kind === 'break-after' ? Math.max(0, mode.chunks) : Infinity;
}

/** After a cut-off: break drops the connection, stall keeps it open (until the client or close() ends it). */
function stopAt(ex: Exchange, mode: UpstreamMode): void {
  if (mode.kind === 'break-after') ex.destroy();
}

/**
 * Streams SSE frames as separate writes. Between frames it waits `slow-chunks` delay or the server's chunkDelayMs;
 * `stall-after`/`break-after` stop after N frames (the [DONE] frame counts as one).
 */
export async function deliverStream(ex: Exchange, headers: HeaderMap, frames: readonly string[], mode: UpstreamMode, chunkDelayMs: number): Promise<void> {
  const delay = mode.kind === 'slow-chunks' ? mode.delayMs : chunkDelayMs;
  const limit = cutoff(mode);
  const { res } = ex;
  res.writeHead(200, headers);
  // Headers normally travel with the first frame; flush them now when no frame follows right away.
  if (limit === 0 || mode.kind === 'silent-start') res.flushHeaders();
  if (mode.kind === 'silent-start' && !(await ex.sleep(mode.delayMs))) return;
  for (let i = 0; i < frames.length; i++) {
    if (i >= limit) return stopAt(ex, mode);
    if (i > 0 && delay > 0 && !(await ex.sleep(delay))) return;
    if (!ex.isOpen()) return;
    res.write(frames[i] as string);
  }
  // Stalling or breaking right before the end of the chunked body keeps the response unfinished.
  if (limit !== Infinity) return stopAt(ex, mode);
  res.end();
}

/**
 * Sends a JSON body with content-length. `slow-chunks` sends the headers, waits, then the body.
 * `stall-after`/`break-after` send the headers and, when N > 0, the first half of the body, then stall or break.
 */
export async function deliverJson(ex: Exchange, headers: HeaderMap, body: string, mode: UpstreamMode): Promise<void> {
  const { res } = ex;
  res.writeHead(200, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  if (mode.kind === 'slow-chunks') {
    res.flushHeaders();
    if (!(await ex.sleep(mode.delayMs))) return;
    res.end(body);
    return;
  }
  const limit = cutoff(mode);
  if (limit === Infinity) {
    // A string body lets Node send head and body in one write; a Buffer would cost a writev.
    res.end(body);
    return;
  }
  const bytes = Buffer.from(body, 'utf8');
  if (limit > 0) res.write(bytes.subarray(0, Math.floor(bytes.length / 2)));
  else res.flushHeaders();
  stopAt(ex, mode);
}

/** Writes `total` bytes of `unit` repeated, waiting for the socket to drain so the upstream itself holds little. */
async function writeRepeated(ex: Exchange, unit: Buffer, total: number): Promise<boolean> {
  const { res } = ex;
  for (let sent = 0; sent < total; sent += unit.length) {
    if (!ex.isOpen()) return false;
    if (!res.write(unit)) {
      const open = await new Promise<boolean>((resolve) => {
        const done = (ok: boolean) => {
          res.off('drain', onDrain);
          res.off('close', onClose);
          resolve(ok);
        };
        const onDrain = () => done(true);
        const onClose = () => done(false);
        res.on('drain', onDrain);
        res.on('close', onClose);
      });
      if (!open) return false;
    }
  }
  return true;
}

const HUGE_UNIT = Buffer.alloc(64 * 1024, 'a');

/** `long-stream` in OpenAI's format: SSE chunks of `chunkBytes` letters each (one frame written again and again), then the end. */
export async function deliverLongStream(ex: Exchange, mode: Extract<UpstreamMode, { kind: 'long-stream' }>): Promise<void> {
  const chunk = (delta: string, finish: string | null, extra = '') =>
    `data: {"id":"chatcmpl-long","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":${delta}${extra},"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;
  const logprob = '{"token":"a","logprob":-0.1,"bytes":[97],"top_logprobs":[]}';
  const logprobs = mode.logprobs ? `,"logprobs":{"content":[${Array<string>(mode.logprobs).fill(logprob).join(',')}]}` : '';
  const frame = chunk(`{"content":"${'a'.repeat(mode.chunkBytes)}"}`, null, logprobs);
  return deliverRepeated(ex, chunk('{"role":"assistant","content":""}', null), frame, mode.chunks, `${chunk('{}', 'stop')}data: [DONE]\n\n`);
}

/** An SSE stream: `head`, then `frame` `count` times (Infinity: until the reader leaves), then `tail`. */
export async function deliverRepeated(ex: Exchange, head: string, frame: string, count: number, tail: string): Promise<void> {
  const unit = Buffer.from(frame);
  ex.res.writeHead(200, { 'content-type': 'text/event-stream' });
  ex.res.write(head);
  if (!(await writeRepeated(ex, unit, count * unit.length))) return;
  ex.res.end(tail);
}

/**
 * `huge-body`: the head of an answer, then `bytes` of filler that never completes it (no closing quote, no
 * newline), then the connection is dropped.
 */
export async function deliverHugeBody(ex: Exchange, stream: boolean, mode: Extract<UpstreamMode, { kind: 'huge-body' }>): Promise<void> {
  const { res } = ex;
  const head = stream
    ? 'data: {"id":"chatcmpl-huge","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"'
    : '{"id":"chatcmpl-huge","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"';
  res.writeHead(200, {
    'content-type': stream ? 'text/event-stream' : 'application/json',
    ...(mode.declare ? { 'content-length': String(head.length + mode.bytes) } : {}),
  });
  res.write(head);
  if (await writeRepeated(ex, HUGE_UNIT, mode.bytes)) ex.destroy();
}
