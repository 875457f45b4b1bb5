import { loadConfigFile } from './config/load-file.js';
import { ConfigError } from './config/secret-ref.js';
import { createGateway } from './gateway.js';
import { VERSION } from './version.js';

/** Command line entry: load config, open the store, listen, and shut down gracefully on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const file = loadConfigFile(process.env);
  const gateway = await createGateway({ config: file.config, configPath: file.watchPath });
  const { settings } = gateway.configService.current();
  const configured = [...gateway.configService.current().providers.values()].filter((p) => p.keys.length > 0).map((p) => p.name);
  const address = await gateway.listen();
  gateway.log.info(
    {
      version: VERSION,
      address,
      dataDir: gateway.store.path,
      configFile: file.path,
      providersWithKeys: configured,
    },
    `tollgate ${VERSION} listening on ${settings.host}:${settings.port}`,
  );

  if (!gateway.adminKeyRequired) {
    gateway.log.info('admin API (/api) answers loopback clients only; set TOLLGATE_ADMIN_KEY to require a key and allow remote administration');
  }

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    gateway.log.info({ signal, graceMs: settings.shutdownGraceMs }, 'shutting down: finishing in-flight requests');
    gateway
      .close()
      .then(() => {
        gateway.log.info('shutdown complete');
        process.exit(0);
      })
      .catch((err: unknown) => {
        gateway.log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`tollgate: configuration error: ${err.message}\n`);
  } else {
    process.stderr.write(`tollgate: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
});
