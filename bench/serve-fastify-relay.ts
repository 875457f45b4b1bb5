// Child-process entry: the fastify + undici relay (the stack's floor), in its own event loop.
import { startFastifyRelay } from './fastify-relay.js';
import { readServeArgs } from './serve-args.js';
import { serveControl } from './serve-control.js';

const args = readServeArgs(true);
const relay = await startFastifyRelay({ upstream: args.upstream, port: args.port, host: '127.0.0.1' });
serveControl(relay.url, () => relay.close());
