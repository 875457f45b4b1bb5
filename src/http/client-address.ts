import { isIPv4, type Socket } from 'node:net';
import { hostname } from 'node:os';
import type { FastifyRequest } from 'fastify';
import { isLoopbackAddress, normalizeAddress } from '../config/address.js';
import type { ClientIpHeader, Settings } from '../core/config.js';

/**
 * The client's address. The socket peer, unless the peer is a proxy the operator named in `trusted_proxies`:
 * then the addresses it forwards are read from the right (each trusted proxy appends the address it saw) and the
 * first that is not a trusted proxy is the client. Deliberately not fastify's `request.ip` with `trustProxy`: a
 * forwarded-for header must never turn a remote client into a "local" one unless the operator said which proxy may
 * speak for it. With `client_ip_header` the operator also said which header that proxy sets: only it is read.
 */
export function clientAddress(request: FastifyRequest, settings: Pick<Settings, 'trustedProxies' | 'clientIpHeader'>): string {
  const trusted = settings.trustedProxies;
  const peer = normalizeAddress(request.socket.remoteAddress ?? '');
  if (trusted.size === 0 || !trusted.has(peer)) return peer;
  if (settings.clientIpHeader !== null) {
    // The proxy sets this header and passes the client's others through: they are the client's own words, never read.
    const chain = forwardedChain(request.headers, settings.clientIpHeader);
    return chain === null ? peer : clientIn(chain, trusted, peer);
  }
  const chains: string[][] = [];
  for (const name of READ_ORDER) {
    const chain = forwardedChain(request.headers, name);
    if (chain !== null) chains.push(chain);
  }
  const client = chains.length === 0 ? peer : clientIn(chains[0]!, trusted, peer);
  if (!isLoopbackAddress(client)) return client;
  // A proxy sets the header it knows and passes the client's others through (nginx with `proxy_set_header X-Real-IP
  // $remote_addr;` alone forwards an X-Forwarded-For the client wrote itself). So a loopback client in one header is
  // believed only when every other header the request carries agrees: else the client is the one they name.
  for (const chain of chains.slice(1)) {
    const other = clientIn(chain, trusted, peer);
    if (!isLoopbackAddress(other)) return other;
  }
  return client;
}

/** The headers read without `client_ip_header`, the first present deciding unless it names a loopback client. */
const READ_ORDER: readonly ClientIpHeader[] = ['x-forwarded-for', 'forwarded', 'x-real-ip'];

/** The first address of a chain, read from the right, that is not a trusted proxy; else the peer (the innermost proxy). */
function clientIn(chain: readonly string[], trusted: ReadonlySet<string>, peer: string): string {
  for (let i = chain.length - 1; i >= 0; i--) {
    const hop = normalizeAddress(chain[i] ?? '');
    if (hop === '') continue;
    if (!trusted.has(hop)) return hop;
  }
  // Only trusted proxies in the chain (or none): the innermost proxy is the client.
  return peer;
}

/**
 * The address chain one header forwards, nearest last, or null when the request does not carry it. A trusted proxy
 * may name the client in X-Forwarded-For, the `for=` of Forwarded (RFC 7239) or X-Real-IP (nginx's
 * `proxy_set_header X-Real-IP $remote_addr`, often its only one); without `client_ip_header` they are read in that
 * order (READ_ORDER). Without any the proxy would count as the client, and a proxy on this host makes every
 * client local.
 */
function forwardedChain(headers: FastifyRequest['headers'], name: ClientIpHeader): string[] | null {
  const value = headers[name];
  if (value === undefined) return null;
  if (name === 'x-forwarded-for') return (Array.isArray(value) ? value.join(',') : value).split(',');
  if (typeof value !== 'string') return null;
  return name === 'forwarded' ? forwardedFor(value) : [value];
}

/** The `for=` nodes of a Forwarded header (`for=192.0.2.60;proto=http, for="[2001:db8::17]:4711"`), ports dropped. */
function forwardedFor(value: string): string[] {
  const nodes: string[] = [];
  for (const element of value.split(',')) {
    for (const pair of element.split(';')) {
      const eq = pair.indexOf('=');
      if (eq === -1 || pair.slice(0, eq).trim().toLowerCase() !== 'for') continue;
      const node = pair.slice(eq + 1).trim().replace(/^"|"$/g, '');
      if (node.startsWith('[')) {
        const end = node.indexOf(']');
        nodes.push(end === -1 ? node : node.slice(1, end));
      } else {
        // `192.0.2.60:80`; an obfuscated node (`_hidden`, `unknown`) stays as it is: no address, so not local.
        const colon = node.indexOf(':');
        nodes.push(colon === -1 ? node : node.slice(0, colon));
      }
    }
  }
  return nodes;
}

/** Loopback or not, per connection: a socket's peer does not change, so it is worked out once per connection. */
const loopbackPeers = new WeakMap<Socket, boolean>();

function peerIsLoopback(socket: Socket): boolean {
  let loopback = loopbackPeers.get(socket);
  if (loopback === undefined) {
    loopback = isLoopbackAddress(socket.remoteAddress);
    loopbackPeers.set(socket, loopback);
  }
  return loopback;
}

/**
 * Whether the request comes from another machine (see `clientAddress`), or names this one by a foreign host, or comes
 * from a page of a site on another machine: the browser on this machine runs it, but it is not the operator's
 * client, and the gateway answers such pages (src/http/cors.ts).
 */
export function isRemoteClient(request: FastifyRequest, settings: Settings): boolean {
  // Without trusted proxies the client is the peer, whatever the headers say.
  const local = settings.trustedProxies.size === 0 ? peerIsLoopback(request.socket) : isLoopbackAddress(clientAddress(request, settings));
  return !local || !namesThisMachine(request.headers.host) || !originIsThisMachine(request.headers.origin);
}

/** Whether a request's Origin (absent from all but browsers) is a page served by this machine. */
function originIsThisMachine(origin: string | undefined): boolean {
  if (origin === undefined) return true;
  // `null`: a sandboxed frame, a file, a redirect across sites: nothing that proves it local.
  if (!URL.canParse(origin)) return false;
  return hostIsThisMachine(new URL(origin).host);
}

/** This machine's own name (Debian maps it to 127.0.1.1, so a local client may use it). */
const MACHINE_NAME = hostname().toLowerCase();

/**
 * Whether a request's Host names this machine: localhost (and `*.localhost`, which browsers resolve to loopback
 * themselves), a loopback or unspecified address, or the machine's own name. A page on another site that rebinds its
 * DNS name to 127.0.0.1 reaches this port from the user's own browser, as a loopback peer and "same-origin" to the
 * browser; its requests still carry its own name as Host. So what is open to loopback clients (model calls without
 * a virtual key, the management API without an admin key) also needs a Host that names this machine. A request
 * without Host (HTTP/1.0) cannot come from a browser.
 */
export function namesThisMachine(host: string | undefined): boolean {
  if (host === undefined) return true;
  // A client sends the same Host on every request: the last answer is kept (this runs on every model call).
  if (host === lastHost) return lastAnswer;
  lastAnswer = hostIsThisMachine(host);
  lastHost = host;
  return lastAnswer;
}

let lastHost: string | undefined;
let lastAnswer = false;

function hostIsThisMachine(host: string): boolean {
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) {
    // [IPv6]:port
    const end = name.indexOf(']');
    name = end === -1 ? name : name.slice(1, end);
    return name === '::1' || name === '::' || isLoopbackAddress(name);
  }
  const colon = name.lastIndexOf(':');
  if (colon !== -1) name = name.slice(0, colon);
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name === 'localhost' || name.endsWith('.localhost') || name === MACHINE_NAME) return true;
  return isIPv4(name) && (name.startsWith('127.') || name === '0.0.0.0');
}

/** Whether the request carries a header a reverse proxy adds: then its socket peer may not be the client. */
export function hasProxyHeader(request: FastifyRequest): boolean {
  const headers = request.headers;
  return headers['x-forwarded-for'] !== undefined || headers.forwarded !== undefined || headers['x-real-ip'] !== undefined;
}
