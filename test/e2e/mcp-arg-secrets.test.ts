import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// Stdio MCP servers take credentials on their command line as often as in their environment: the reference Postgres
// server its database URL with the password in it, others `--api-key <value>` or `--token=<value>`. A server that
// fails says so on stderr, often quoting its arguments; its last line goes to `last_error`, which the
// unauthenticated GET /health shows.

const PASSWORD = 'Pg-pass-w0rd!';
const QUERY_KEY = 'sslkey-q1w2e3r4';
const API_KEY = 'key-9f8e7d6c5b4a';
const TOKEN = 'tok-1a2b3c4d5e6f';
const DB_URL = `postgresql://reporting:${encodeURIComponent(PASSWORD)}@db.internal:5432/sales?sslpassword=${QUERY_KEY}`;
const SECRETS = [PASSWORD, encodeURIComponent(PASSWORD), QUERY_KEY, API_KEY, TOKEN];

// Fails as such a server does: quoting what it was started with, then exiting.
const SCRIPT = "process.stderr.write('cannot start with ' + process.argv.slice(1).join(' ') + '\\n'); process.exit(1)";

let tg: RunningGateway;

beforeAll(async () => {
  tg = await startGateway({
    mcp: { servers: { db: { type: 'stdio', command: process.execPath, args: ['-e', SCRIPT, DB_URL, '--api-key', API_KEY, `--token=${TOKEN}`, '--readonly'] } } },
  });
});
afterAll(async () => {
  await tg?.stop();
});

describe("a stdio MCP server's credentials in its arguments", () => {
  it('never come out in last_error (/health, /api/mcp) or the config /api/mcp shows, which keeps the rest readable', async () => {
    let health = '';
    const deadline = Date.now() + 15_000;
    while (!health.includes('cannot start with')) {
      if (Date.now() > deadline) throw new Error(`no failed attempt in /health: ${health}`);
      await new Promise((done) => setTimeout(done, 50));
      health = await (await fetch(`${tg.url}/health`)).text();
    }
    const api = await (await fetch(`${tg.url}/api/mcp`)).text();
    for (const answer of [health, api]) for (const secret of SECRETS) expect(answer).not.toContain(secret);
    expect(health).toContain('--readonly');

    const server = (JSON.parse(api) as { servers: Array<{ name: string; config: Record<string, unknown> & { args: string[] } }> }).servers.find((entry) => entry.name === 'db');
    expect(server?.config.args).toEqual(['-e', SCRIPT, 'postgresql://****@db.internal:5432/sales?sslpassword=****', '--api-key', '****', '--token=****', '--readonly']);
    const config = await (await fetch(`${tg.url}/api/config`)).text();
    for (const secret of SECRETS) expect(config).not.toContain(secret);

    // Written back as read (the dashboard saves the servers as /api/mcp shows them), the masked arguments stand for
    // the stored ones.
    const patched = await fetch(`${tg.url}/api/config`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ mcp: { servers: { db: { ...server?.config, disabled: true } } } }),
    });
    expect(patched.status).toBe(200);
    const stored = tg.gateway.configService.current().mcp.servers.get('db');
    expect(stored?.type === 'stdio' ? stored.args : null).toEqual(['-e', SCRIPT, DB_URL, '--api-key', API_KEY, `--token=${TOKEN}`, '--readonly']);
  });
});
