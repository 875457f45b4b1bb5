import { pino } from 'pino';
import { buildGatewayIfStale } from '../scripts/build.js';
import type { createGateway as CreateGateway } from '../src/gateway.js';
import type { Log } from '../src/log.js';

/**
 * The gateway the bench servers run: the compiled build in dist/ (what `npm start` and the binary run; the bench
 * builds it first when stale), or the TypeScript sources through tsx with `TOLLGATE_BENCH_SOURCE=src`. They
 * differ: tsx compiles with esbuild's keepNames, which wraps every function a closure creates in a `__name` call
 * (Object.defineProperty), about 3% of a request's CPU and more garbage.
 */
export async function loadGateway(): Promise<{ createGateway: typeof CreateGateway; silentLog: Log }> {
  const fromSource = process.env.TOLLGATE_BENCH_SOURCE === 'src';
  // Servers start side by side: the build takes a lock, so only one builds and the others wait for it.
  if (!fromSource) await buildGatewayIfStale({ declarations: false });
  const module = (await import(fromSource ? '../src/index.js' : '../dist/index.js')) as { createGateway: typeof CreateGateway };
  return { createGateway: module.createGateway, silentLog: pino({ level: 'silent' }) };
}
