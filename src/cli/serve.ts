import { writeSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { loadConfigFile } from '../config/load-file.js';
import { applyConfigFileNow } from '../config/watch-file.js';
import { ConfigError, type Env } from '../config/secret-ref.js';
import { createGateway } from '../gateway.js';
import type { Settings } from '../core/config.js';
import { VERSION } from '../version.js';

/**
 * An error nothing caught leaves the process in an unknown state: it must end now, so a supervisor restarts it,
 * rather than keep its port without answering. The line goes to stderr synchronously (a logger may buffer).
 * The process kills itself with SIGKILL instead of `process.exit`: exit runs native clean-up hooks, and LMDB's,
 * caught in the middle of a commit, waits forever for a thread that waits for this one (a deadlock seen in 3 of
 * 4 crashes under load). Committed spend survives a kill -9 (test/e2e/spend-crash.test.ts); the request that
 * was being committed is lost either way.
 */
function dieOnUncaught(kind: string, err: unknown): never {
  const detail = err instanceof Error ? (err.stack ?? err.message) : String(err);
  try {
    writeSync(2, `${JSON.stringify({ level: 60, time: Date.now(), service: 'tollgate', msg: `fatal: ${kind}; exiting`, err: detail })}\n`);
  } finally {
    process.kill(process.pid, 'SIGKILL');
  }
  throw err;
}

/** A start-up failure explained in one line, without a stack. */
export class StartError extends Error {}

/** How the command line named each setting the operator may have to change: its flag when given, else its variable. */
export interface SettingNames {
  config: string;
  port: string;
  host: string;
}

/** `name` set to `value` as the operator would write it: `--port 8081`, or `PORT=8081` in front of the command. */
function setTo(name: string, value: string | number): string {
  return name.startsWith('--') ? `${name} ${value}` : `${name}=${value}`;
}

/**
 * Listens, turning a taken port into one line that names the setting to change: the flag when the command line set
 * it, since a flag wins over its variable and PORT=8081 would not have moved `tollgate --port 8080`.
 */
async function listenOrExplain(listen: () => Promise<string>, host: string, port: number, names: SettingNames): Promise<string> {
  try {
    return await listen();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const otherPort = names.port === 'PORT' ? `PORT=${port + 1} npm start` : setTo(names.port, port + 1);
    if (code === 'EADDRINUSE') throw new StartError(`port ${port} on ${host} is already in use; set ${names.port} to another port (e.g. ${otherPort})`);
    if (code === 'EACCES') throw new StartError(`not allowed to listen on port ${port} on ${host}; set ${names.port} to a port above 1023`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new StartError(`cannot listen on host ${host}: no such local address; set ${names.host} (e.g. ${setTo(names.host, '0.0.0.0')})`);
    throw err;
  }
}

/** The access mode in one line: who may call models without a virtual key, and who may use /api. */
function accessLine(settings: Settings, adminKeyRequired: boolean): string {
  const models = settings.requireVirtualKey
    ? 'every model call needs a virtual key (require_virtual_key)'
    : settings.anonymousAccess === 'any'
      ? 'model calls without a virtual key are served to ANY client that reaches the port, on your provider keys (anonymous_access: any)'
      : 'model calls without a virtual key are served to clients on this machine only; other machines need a virtual key (set anonymous_access: any or TOLLGATE_ANONYMOUS_ACCESS=any to open)';
  const admin = adminKeyRequired
    ? '/api needs the admin key'
    : '/api answers clients on this machine only (set TOLLGATE_ADMIN_KEY to require a key and allow remote administration)';
  return `access: ${models}; ${admin}${proxyPart(settings)}`;
}

/** Whose forwarded headers name the client, and which headers (see http/client-address.ts); nothing without proxies. */
function proxyPart(settings: Settings): string {
  const header = settings.clientIpHeader;
  if (settings.trustedProxies.size === 0) return header === null ? '' : `; client_ip_header ${header} is ignored: no trusted_proxies`;
  const proxies = [...settings.trustedProxies].join(', ');
  return header === null
    ? `; client address from X-Forwarded-For, Forwarded or X-Real-IP of trusted proxies ${proxies} (set client_ip_header to the one header your proxy sets)`
    : `; client address from ${header} of trusted proxies ${proxies} only (client_ip_header)`;
}

/** A second SIGTERM/SIGINT this long after the first forces the exit; one sooner is the first delivered twice. */
const REPEATED_SIGNAL_MS = 1_000;
/** How long an exit that cannot wait for in-flight requests waits for the store to be released. */
const STORE_RELEASE_MS = 2_000;

/**
 * Ends the process with `code` once the store is closed. `process.exit` joins libuv's worker threads, and lmdb-js's
 * write thread, caught waiting for the main thread to run a transaction's callback (usage rollups, cache entries,
 * every commit with TOLLGATE_FSYNC=true), waits for it forever: the process hung after its port closed, until
 * something killed it. Closing the store first commits the writes still waiting for their turn or window and lets
 * that thread finish. If it has not within STORE_RELEASE_MS the process kills itself, as dieOnUncaught does: what
 * was committed survives that.
 */
function exitOnceStoreReleased(store: { close(): Promise<void> }, code: number): void {
  const killSelf = (): void => {
    process.kill(process.pid, 'SIGKILL');
  };
  setTimeout(killSelf, STORE_RELEASE_MS).unref();
  store.close().then(() => process.exit(code), killSelf);
}

/**
 * Runs the gateway as a server until SIGTERM/SIGINT (a second one a moment later forces the exit): load the config file, open the store, listen, log the address
 * and the access mode, and shut down gracefully. `env` is the process environment with the command line's flags
 * applied (a flag wins over its variable); `names` says how the config file, port and host were named (the flag or
 * the variable), for the messages that ask to change them. Any uncaught error from here on ends the process (see
 * dieOnUncaught).
 */
export async function serve(env: Env, names: SettingNames = { config: 'TOLLGATE_CONFIG', port: 'PORT', host: 'HOST' }): Promise<void> {
  process.on('uncaughtException', (err) => dieOnUncaught('uncaught exception', err));
  process.on('unhandledRejection', (err) => dieOnUncaught('unhandled promise rejection', err));
  const file = loadConfigFile(env, process.cwd(), names.config);
  const gateway = await createGateway({ config: file.config, configPath: file.watchPath, env });
  const { settings } = gateway.configService.current();
  const configured = [...gateway.configService.current().providers.values()].filter((p) => p.keys.length > 0).map((p) => p.name);
  let address: string;
  try {
    address = await listenOrExplain(() => gateway.listen(), settings.host, settings.port, names);
  } catch (err) {
    await gateway.close(0);
    throw err;
  }
  gateway.log.info(
    {
      version: VERSION,
      pid: process.pid,
      address,
      dataDir: gateway.store.path,
      configFile: file.path,
      providersWithKeys: configured,
    },
    `tollgate ${VERSION} listening on ${settings.host}:${settings.port}`,
  );

  gateway.log.info({ anonymousAccess: settings.requireVirtualKey ? 'none' : settings.anonymousAccess, adminApi: gateway.adminKeyRequired ? 'admin-key' : 'loopback', clientIpHeader: settings.clientIpHeader }, accessLine(settings, gateway.adminKeyRequired));

  let stoppingSince = 0;
  const stop = (signal: NodeJS.Signals): void => {
    if (stoppingSince !== 0) {
      // `npm start` in a terminal passes Ctrl-C on to the server, which the terminal signalled too: one signal
      // arrives twice within moments. One that comes later is the operator asking to stop now.
      if (performance.now() - stoppingSince < REPEATED_SIGNAL_MS) return;
      gateway.log.warn({ signal }, 'second signal: exiting now, without waiting for in-flight requests');
      exitOnceStoreReleased(gateway.store, 128 + osConstants.signals[signal]);
      return;
    }
    stoppingSince = performance.now();
    gateway.log.info({ signal, graceMs: settings.shutdownGraceMs }, 'shutting down: finishing in-flight requests');
    gateway
      .close()
      .then(() => {
        gateway.log.info('shutdown complete');
        process.exit(0);
      })
      .catch((err: unknown) => {
        gateway.log.error({ err }, 'shutdown failed');
        exitOnceStoreReleased(gateway.store, 1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // SIGHUP is the usual "reload" (systemd's ExecReload, `kill -HUP`): the config file is read again at once. Unhandled,
  // it ended the process on the spot, cutting every request in flight.
  process.on('SIGHUP', () => {
    if (stoppingSince !== 0) return;
    applyConfigFileNow(file.watchPath, gateway.configService, gateway.log).catch((err: unknown) => gateway.log.error({ err }, 'reload failed'));
  });
}

/** The one line a failed start prints (no stack for a configuration or start error, which say what to change). */
export function describeStartFailure(err: unknown): string {
  if (err instanceof ConfigError) return `tollgate: configuration error: ${err.message}`;
  if (err instanceof StartError) return `tollgate: ${err.message}`;
  return `tollgate: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
}
