// Starts what a soak drives: the scripted OpenAI upstream (in this process) and a real gateway process
// (`node --import tsx src/main.ts`, as `npm start` runs it) watching a config file, plus a virtual key with a rate
// limit and a budget high enough never to refuse the soak's traffic.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnMain, type MainProcess } from '../helpers/main-process.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { soakConfig } from './soak-config.js';

const GC_ON_SIGNAL = pathToFileURL(join(import.meta.dirname, 'gc-on-signal.mjs')).href;

export interface SoakRig {
  upstream: ScriptedUpstream;
  gateway: MainProcess;
  /** The watched config file: writing it applies a new config without a restart. */
  configPath: string;
  /** Runs a full garbage collection in the gateway (see gc-on-signal.mjs) and gives it a moment to finish. */
  collectGarbage(): Promise<void>;
  /** The virtual key's secret, sent as `Authorization: Bearer`. */
  key: string;
  /** Ends the gateway (SIGTERM, then SIGKILL after 10 s) and the upstream, and removes the working directory. */
  stop(): Promise<void>;
}

export async function startSoakRig(): Promise<SoakRig> {
  // A few milliseconds between chunks, so streams last long enough to be cancelled in the middle.
  const upstream = await startOpenAIUpstream({ apiKey: 'sk-soak', chunkDelayMs: 3, record: false });
  const cwd = mkdtempSync(join(tmpdir(), 'tollgate-soak-'));
  const configPath = join(cwd, 'tollgate.config.json');
  writeFileSync(configPath, JSON.stringify(soakConfig(upstream.url, 0), null, 2));
  let gateway: MainProcess;
  try {
    gateway = await spawnMain({ cwd, env: { TOLLGATE_CONFIG: configPath }, imports: [GC_ON_SIGNAL] });
  } catch (err) {
    await upstream.close();
    rmSync(cwd, { recursive: true, force: true });
    throw err;
  }
  const stop = async (): Promise<void> => {
    if (gateway.child.exitCode === null && gateway.child.signalCode === null) {
      gateway.child.kill('SIGTERM');
      const killer = setTimeout(() => gateway.child.kill('SIGKILL'), 10_000);
      await gateway.exit;
      clearTimeout(killer);
    }
    await upstream.close();
    rmSync(cwd, { recursive: true, force: true });
  };
  try {
    const created = await fetch(`${gateway.url}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'soak', budget: 1_000_000, rate_limit: 1_000_000, budget_period: 'total' }),
    });
    if (created.status !== 201) throw new Error(`POST /api/keys answered ${created.status}: ${await created.text()}`);
    const { key } = (await created.json()) as { key: string };
    const collectGarbage = async (): Promise<void> => {
      process.kill(gateway.serverPid, 'SIGUSR2');
      await new Promise((done) => setTimeout(done, 500));
    };
    return { upstream, gateway, configPath, key, collectGarbage, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
