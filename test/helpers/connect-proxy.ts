import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';

/** A forward proxy as companies run them: HTTP CONNECT tunnels only, each one recorded. */
export interface ConnectProxy {
  /** e.g. http://127.0.0.1:PORT, the value for HTTPS_PROXY or settings.network.proxy. */
  url: string;
  /** The `host:port` of every tunnel asked for, in order. */
  tunnels: string[];
  /** The Proxy-Authorization header of each CONNECT (undefined when none was sent). */
  authorizations: Array<string | undefined>;
  /** Requests that were not CONNECT (absolute-form GET/POST): a client that did not tunnel. Answered 405. */
  plain: string[];
  close(): Promise<void>;
}

/**
 * Starts a CONNECT proxy on 127.0.0.1. With `refuse`, every CONNECT is answered with that status (407: the
 * proxy wants credentials) and no tunnel is opened. `unreachable` names the `host:port`s it cannot reach (a company
 * proxy asked for a machine's link-local or loopback address): those get a 502. `resolve` maps a `host:port` asked
 * for to the one tunnelled to, so a test can name a cloud's host (`res.openai.azure.us`) served on loopback.
 */
export async function startConnectProxy(options: { refuse?: number; unreachable?: string[]; resolve?: Record<string, string> } = {}): Promise<ConnectProxy> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const proxy = { tunnels: [] as string[], authorizations: [] as Array<string | undefined>, plain: [] as string[] };
  const server: Server = createServer((req, res) => {
    proxy.plain.push(`${req.method} ${req.url}`);
    res.writeHead(405, { 'content-type': 'text/plain' }).end('this proxy only tunnels (CONNECT)');
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    track(client);
    const target = req.url ?? '';
    proxy.tunnels.push(target);
    proxy.authorizations.push(req.headers['proxy-authorization']);
    if (options.refuse) {
      client.end(`HTTP/1.1 ${options.refuse} Refused\r\ncontent-length: 0\r\n\r\n`);
      return;
    }
    if (options.unreachable?.includes(target)) {
      client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const to = options.resolve?.[target] ?? target;
    const at = to.lastIndexOf(':');
    const upstream = connect(Number(to.slice(at + 1)), to.slice(0, at).replace(/^\[|\]$/g, ''));
    track(upstream);
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    ...proxy,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
