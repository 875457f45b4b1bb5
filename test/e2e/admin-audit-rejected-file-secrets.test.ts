import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load-file.js';
import { AdminClient } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A config file save refused for a key written in the wrong place (`keys: [{ sk-... }]`, the `value:` forgotten) was
 * refused with the schema's words, which quote the unknown field's name: the key itself. That reason is shown by
 * /health, which answers anyone (no admin key), by GET /api/config, in the log, and in the 404 a client gets for a
 * route only the refused file defines. The key is now redacted there; the reason still names the field.
 */
const SECRET = 'sk-proj-Zq8x1Lw3Vb7Nn2Pp5Rr9Tt4Yy6';
let upstream: ScriptedUpstream;
let tg: RunningGateway;
let dir: string;
let path: string;

function save(text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
  dir = mkdtempSync(join(tmpdir(), 'tollgate-rejected-'));
  path = join(dir, 'tollgate.config.yaml');
  writeFileSync(path, `providers:\n  openai:\n    base_url: ${upstream.url}/v1\n    api_key: sk-upstream-test\n`);
  tg = await startGateway(loadConfigFile({ TOLLGATE_CONFIG: path }, dir).config, { TOLLGATE_ADMIN_KEY: 'admin-key-0123456789' }, { configPath: path });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a refused config file save', () => {
  it('does not show a key quoted by the schema, on /health, /api/config or to clients', async () => {
    save(`providers:\n  openai:\n    base_url: ${upstream.url}/v1\n    keys: [{ ${SECRET} }]\nroutes:\n  chat:\n    targets: [{ model: openai/gpt-4o-mini }]\n`);
    let health: { config_file_rejection: { reason: string } | null } = { config_file_rejection: null };
    const deadline = Date.now() + 10_000;
    while (health.config_file_rejection === null && Date.now() < deadline) {
      await new Promise((done) => setTimeout(done, 100));
      health = (await (await fetch(`${tg.url}/health`)).json()) as typeof health;
    }
    const reason = health.config_file_rejection?.reason ?? '';
    expect(reason).toContain('providers.openai.keys.0');
    expect(reason).not.toContain(SECRET);
    expect(reason).not.toContain(SECRET.slice(8));

    const config = await new AdminClient(`${tg.url}/api`, 'admin-key-0123456789').get('/config');
    expect(config.status).toBe(200);
    expect(config.body.file_rejection.reason).toContain('providers.openai.keys.0');
    expect(config.text).not.toContain(SECRET.slice(8));

    // A client asking for the route only the refused file defines gets a 404 that says why, without the key.
    const refused = await tg.client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err as { status: number; message: string });
    expect(refused).toMatchObject({ status: 404 });
    expect((refused as { message: string }).message).toContain('rejected');
    expect((refused as { message: string }).message).not.toContain(SECRET.slice(8));

    // The running config kept serving.
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]?.message.content).toBe('echo: hi');
  });
});
