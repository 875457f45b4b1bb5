// Child-process entry: the bare undici pass-through proxy, in its own event loop.
import { startBareProxy } from './bare-proxy.js';
import { readServeArgs } from './serve-args.js';
import { serveControl } from './serve-control.js';

const args = readServeArgs(true);
const proxy = await startBareProxy({ upstream: args.upstream, port: args.port, host: '127.0.0.1' });
serveControl(proxy.url, () => proxy.close());
