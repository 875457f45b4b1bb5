import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { ConfigInput as ConfigFile } from '../../src/config/schema.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { createLog, type Log } from '../../src/log.js';

export interface RunningGateway {
  gateway: Gateway;
  url: string;
  /** The official OpenAI client pointed at the gateway. */
  client: OpenAI;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Reuse a data directory (to test what survives a restart); it is then not deleted on stop. */
  dataDir?: string;
  /** A config file to watch. */
  configPath?: string;
  /**
   * Where the dashboard is served from (else the repository's dashboard/dist, which a browser test may be
   * rebuilding, or which may not be built at all on a developer's machine).
   */
  dashboardDir?: string;
  /** The clock the gateway's rate-limit windows, usage rollups, budget periods and key expiry run on (see GatewayOptions.clock). */
  clock?: () => number;
  /** The gateway's logger (else one at TEST_LOG's level, silent by default). */
  log?: Log;
}

/** Starts a real gateway on an ephemeral loopback port with its own temporary data directory. */
export async function startGateway(config: ConfigFile = {}, env: Record<string, string> = {}, options: StartOptions = {}): Promise<RunningGateway> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'tollgate-test-'));
  const gateway = await createGateway({
    config: { ...config, settings: { data_dir: dataDir, ...config.settings } },
    configPath: options.configPath ?? null,
    env,
    ...(options.dashboardDir ? { dashboardDir: options.dashboardDir } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    log: options.log ?? createLog(process.env.TEST_LOG ?? 'silent'),
  });
  const url = await gateway.listen({ port: 0, host: '127.0.0.1' });
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
  return {
    gateway,
    url,
    client,
    async stop() {
      await gateway.close(500);
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A config with the `openai` provider pointed at a scripted upstream. */
export function openAIConfig(upstreamUrl: string, extra: ConfigFile = {}): ConfigFile {
  return {
    ...extra,
    providers: { openai: { base_url: `${upstreamUrl}/v1`, api_key: 'sk-upstream-test' }, ...extra.providers },
  };
}
