// What the scripted providers share: a loopback HTTP server on an ephemeral port, recorded calls, a default mode
// and one-shot queued modes. Each provider adds its own wire format.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

export abstract class ScriptedServer<Mode, Call> {
  url = '';
  readonly calls: Call[] = [];
  protected mode: Mode;
  protected queue: Mode[] = [];
  protected readonly server: Server | TlsServer;

  /** With `tls` (a key and the certificate a test CA signed) it serves HTTPS. */
  constructor(
    private readonly okMode: Mode,
    private readonly tls?: { key: Buffer | string; cert: Buffer | string },
  ) {
    this.mode = okMode;
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      // A handler that throws answers like the provider's own internal error, or drops a response already started.
      this.handle(req, res).catch(() => {
        if (!res.headersSent) this.internalError(res);
        else res.destroy();
      });
    };
    this.server = tls ? createTlsServer({ key: tls.key, cert: tls.cert }, handler) : createServer(handler);
  }

  protected abstract handle(req: IncomingMessage, res: ServerResponse): Promise<void>;

  /** The provider's 500 answer. */
  protected abstract internalError(res: ServerResponse): void;

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `${this.tls ? 'https' : 'http'}://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  setMode(mode: Mode): void {
    this.mode = mode;
  }

  enqueue(...modes: Mode[]): void {
    this.queue.push(...modes);
  }

  /** The mode of the next request: a queued one-shot mode first, else the default. */
  protected nextMode(): Mode {
    return this.queue.shift() ?? this.mode;
  }

  reset(): void {
    this.calls.length = 0;
    this.queue = [];
    this.mode = this.okMode;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
