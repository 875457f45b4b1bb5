// Changes the running gateway's config on a timer, alternately through the HTTP API (PATCH /api/config) and by
// saving the watched config file, and checks each change was applied (the config version /health reports moved).
import { writeFileSync } from 'node:fs';
import { soakApiPatch, soakConfig } from './soak-config.js';

export interface ConfigChurn {
  /** Stops the timer; resolves once a change in progress is done. Returns the tally. */
  stop(): Promise<ChurnReport>;
}

export interface ChurnReport {
  applied: number;
  /** Changes that failed or were not applied in time, described. */
  failures: string[];
}

async function configVersion(url: string): Promise<number> {
  const health = (await (await fetch(`${url}/health`)).json()) as { config_version: number; config_file_rejection: unknown };
  if (health.config_file_rejection) throw new Error(`config file rejected: ${JSON.stringify(health.config_file_rejection)}`);
  return health.config_version;
}

/** Polls /health until the config version passes `after` (the file watcher applies a save asynchronously). */
async function versionAfter(url: string, after: number, withinMs: number): Promise<number> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const version = await configVersion(url);
    if (version > after || Date.now() > deadline) return version;
    await new Promise((done) => setTimeout(done, 50));
  }
}

export function startConfigChurn(options: { url: string; upstreamUrl: string; configPath: string; everyMs: number }): ConfigChurn {
  const report: ChurnReport = { applied: 0, failures: [] };
  let step = 0;
  let current: Promise<void> = Promise.resolve();

  const change = async (): Promise<void> => {
    const variant = ++step;
    const before = await configVersion(options.url);
    if (variant % 2 === 0) {
      const res = await fetch(`${options.url}/api/config`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(soakApiPatch(variant)),
      });
      if (res.status !== 200) throw new Error(`PATCH /api/config answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
    } else {
      writeFileSync(options.configPath, JSON.stringify(soakConfig(options.upstreamUrl, variant), null, 2));
    }
    const after = await versionAfter(options.url, before, 5_000);
    if (after <= before) throw new Error(`change ${variant} (${variant % 2 === 0 ? 'API' : 'file'}) not applied within 5 s`);
    report.applied++;
  };

  const timer = setInterval(() => {
    current = current.then(change).catch((err: unknown) => {
      report.failures.push((err as Error).message);
    });
  }, options.everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await current;
      return report;
    },
  };
}
