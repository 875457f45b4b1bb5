import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { processAlive, spawnMain, waitUntilGone, type MainProcess } from '../helpers/main-process.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * SIGHUP, the usual "reload" signal (systemd's `ExecReload=kill -HUP $MAINPID`, `kill -HUP`), reads the config file
 * again. It was not handled, so Node's default ended the gateway on the spot: no drain, every request in flight cut.
 *
 * Injected into the real server process: fs.watch fails as it does on a host out of inotify watches (ENOSPC), so the
 * gateway cannot see saves of its config file ("changes need the API or a restart") and SIGHUP is the way to apply one.
 */
const NO_WATCHES = `
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
fs.watch = () => {
  const err = new Error('ENOSPC: System limit for number of file watchers reached');
  err.code = 'ENOSPC';
  throw err;
};
syncBuiltinESMExports();
`;

let upstream: ScriptedUpstream;
const dirs: string[] = [];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
});
afterAll(async () => {
  await upstream.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function configText(routes: boolean): string {
  const lines = ['providers:', '  lab:', '    type: openai', `    base_url: ${upstream.url}/v1`, '    api_key: sk-any'];
  if (routes) lines.push('routes:', '  chat:', '    targets: [{ model: lab/m }]');
  return `${lines.join('\n')}\n`;
}

describe('SIGHUP', () => {
  it('reads the config file again, and neither ends the gateway nor the request in flight', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'tollgate-sighup-'));
    dirs.push(cwd);
    const fault = join(cwd, 'no-watches.mjs');
    writeFileSync(fault, NO_WATCHES);
    const configPath = join(cwd, 'tollgate.config.yaml');
    writeFileSync(configPath, configText(false));
    const server: MainProcess = await spawnMain({ cwd, env: { LOG_LEVEL: 'info' }, imports: [pathToFileURL(fault).href] });
    try {
      expect(server.output()).toContain('cannot watch the config file');
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20_000 });
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

      // A request in flight (its upstream answers after 1.5 s) when the signal comes.
      const inFlight = client.chat.completions.create({ model: 'lab/slow-headers-1500', messages });
      await new Promise((done) => setTimeout(done, 300));

      // A save the gateway cannot see: the route it adds is not served yet.
      writeFileSync(configPath, configText(true));
      await new Promise((done) => setTimeout(done, 500));
      await expect(client.chat.completions.create({ model: 'chat', messages })).rejects.toMatchObject({ status: 404 });

      process.kill(server.serverPid, 'SIGHUP');
      const answer = await inFlight;
      expect(answer.choices[0]?.message.content).toBe('echo: hi');
      expect(processAlive(server.serverPid)).toBe(true);

      // The save is applied: the new route serves, as a watched save would.
      const deadline = Date.now() + 10_000;
      let served: OpenAI.ChatCompletion | null = null;
      while (served === null && Date.now() < deadline) {
        served = await client.chat.completions.create({ model: 'chat', messages }).catch(() => null);
        if (served === null) await new Promise((done) => setTimeout(done, 100));
      }
      expect(served?.model).toBe('chat');
      expect(server.output()).toContain('reload asked: config file read again');
      const audit = (await (await fetch(`${server.url}/api/audit?action=file.reloaded`)).json()) as { data: unknown[] };
      expect(audit.data).toHaveLength(1);
    } finally {
      server.child.kill('SIGTERM');
      await waitUntilGone(server.serverPid, server.port, 15_000);
      if (processAlive(server.serverPid)) process.kill(server.serverPid, 'SIGKILL');
    }
  }, 90_000);
});
