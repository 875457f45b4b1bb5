// The per-request state the server keeps: connection liveness, cancellable delays and server-side aborts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Exchange } from './modes.js';

export class LiveExchange implements Exchange {
  /** True once the server itself dropped the connection (reset / break-after / shutdown), so it is not a client close. */
  serverAborted = false;
  /** True once the whole response was written. */
  finished = false;
  private open = true;
  private readonly pending = new Map<NodeJS.Timeout, (open: boolean) => void>();

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly startedAt: number,
  ) {}

  isOpen(): boolean {
    return this.open && !this.res.destroyed;
  }

  sleep(ms: number): Promise<boolean> {
    if (!this.isOpen()) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(timer);
        resolve(this.isOpen());
      }, ms);
      this.pending.set(timer, resolve);
    });
  }

  /** Called when the connection closes or the server shuts down: cancels every pending delay. */
  markClosed(): void {
    this.open = false;
    for (const [timer, resolve] of this.pending) {
      clearTimeout(timer);
      resolve(false);
    }
    this.pending.clear();
  }

  destroy(): void {
    this.serverAborted = true;
    const socket = this.res.socket;
    if (!socket || socket.destroyed) return;
    // end() flushes what the response already wrote and sends FIN; destroying on 'finish' then drops the
    // connection with the HTTP response left incomplete. A bare destroy() could discard still-corked frames.
    socket.once('finish', () => socket.destroy());
    socket.end();
  }

  /** Tears the connection down with a TCP RST before any response bytes. */
  reset(): void {
    this.serverAborted = true;
    const socket = this.req.socket;
    if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
    else socket.destroy();
  }
}

/** Reads the whole request body; rejects if the client goes away first. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('close', () => {
      if (!req.complete) reject(new Error('client closed the connection before sending the whole body'));
    });
  });
}
