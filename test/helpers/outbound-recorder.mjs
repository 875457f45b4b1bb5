/**
 * Preloaded into a gateway process (`node --import`) to record every way it could reach the network: each TCP
 * connect (net and tls, so http, undici, fetch, nodemailer and the MCP SDK alike), each UDP send, and each name
 * lookup (dns.lookup, the resolver). Worker threads (the cache embedders) load this module first too. Each
 * attempt is appended as one JSON line to the file named by TOLLGATE_OUTBOUND_LOG, before it happens.
 *
 * Plain JavaScript: it runs before any TypeScript loader, in the main thread and in workers.
 */
import { appendFileSync } from 'node:fs';
import dgram from 'node:dgram';
import dns from 'node:dns';
import { isIP } from 'node:net';
import net from 'node:net';
import { syncBuiltinESMExports } from 'node:module';
import { resolve } from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';
import { threadId } from 'node:worker_threads';
import workerThreads from 'node:worker_threads';

const file = process.env.TOLLGATE_OUTBOUND_LOG;
if (!file) throw new Error('outbound-recorder: TOLLGATE_OUTBOUND_LOG is not set');

function record(kind, destination) {
  appendFileSync(file, `${JSON.stringify({ kind, destination, thread: threadId })}\n`);
}

/** `socket.connect(...)` takes (options), (port, host), (path) or net.connect's normalized [options, callback]. */
function destinationOf(args) {
  let first = args[0];
  if (Array.isArray(first)) first = first[0];
  if (first && typeof first === 'object') {
    if (first.path) return `unix:${first.path}`;
    return `${first.host ?? 'localhost'}:${first.port}`;
  }
  if (typeof first === 'string' && !/^\d+$/.test(first)) return `unix:${first}`;
  return `${typeof args[1] === 'string' ? args[1] : 'localhost'}:${first}`;
}

// This thread runs under the recorder (a worker's line proves the worker hook below works).
record('thread', String(threadId));

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function recordedConnect(...args) {
  record('tcp', destinationOf(args));
  return connect.apply(this, args);
};

for (const method of ['send', 'connect']) {
  const original = dgram.Socket.prototype[method];
  dgram.Socket.prototype[method] = function recordedUdp(...args) {
    const port = args.find((arg, i) => i > 0 && typeof arg === 'number');
    record('udp', `${args.find((arg, i) => i > 0 && typeof arg === 'string') ?? '?'}:${port ?? '?'}`);
    return original.apply(this, args);
  };
}

// Name lookups: net skips them for IP literals, so any lookup at all means a name was about to be contacted.
for (const target of [dns, dns.promises, dns.Resolver.prototype, dns.promises.Resolver.prototype]) {
  for (const name of Object.keys(target).concat(Object.getOwnPropertyNames(target))) {
    if (!/^(lookup|resolve)/.test(name) || typeof target[name] !== 'function') continue;
    const original = target[name];
    target[name] = function recordedLookup(host, ...rest) {
      if (typeof host === 'string' && isIP(host) === 0) record('dns', host);
      return original.call(this, host, ...rest);
    };
  }
}

// Workers do not run --import modules: each one starts with this recorder, then its own script. (The gateway
// starts none from code strings; one that did would be recorded as such.)
{
  const Worker = workerThreads.Worker;
  const self = import.meta.url;
  workerThreads.Worker = class RecordedWorker extends Worker {
    constructor(script, options = {}) {
      if (options.eval) {
        record('eval-worker', String(script).slice(0, 200));
        super(script, options);
        return;
      }
      const href = typeof script === 'object' && script !== null && 'href' in script ? script.href : pathToFileURL(resolve(String(script))).href;
      super(`import(${JSON.stringify(self)}).then(() => import(${JSON.stringify(href)}))`, { ...options, eval: true });
    }
  };
}

// `import { lookup } from 'node:dns'` and `import { Worker } from 'node:worker_threads'` see the patched functions.
syncBuiltinESMExports();
