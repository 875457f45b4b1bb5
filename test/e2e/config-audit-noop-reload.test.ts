import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load-file.js';
import { AdminClient } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A config change that changes nothing in effect is no change: saving the config file as it was (or with only its
 * comments and whitespace changed), or sending the admin API the same body again, makes no new version, no audit
 * entry and no `config.changed`. A real change still does, once.
 */
let upstream: ScriptedUpstream;
const dirs: string[] = [];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
});
afterAll(async () => {
  await upstream.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function yaml(timeoutMs: number, comment = ''): string {
  return [`# tollgate ${comment}`, 'providers:', '  lab:', '    type: openai', `    base_url: ${upstream.url}/v1`, '    api_key: sk-lab-key', `    timeouts: { first_byte_ms: ${timeoutMs} }`, ''].join('\n');
}

/** Writes the file the way editors do: a new file renamed over the old one. */
function saveAtomically(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((done) => setTimeout(done, 25));
  }
}

async function settle(ms = 400): Promise<void> {
  await new Promise((done) => setTimeout(done, ms));
}

describe('config file saves', () => {
  let tg: RunningGateway;
  let path: string;
  let events: Array<{ version: number; source: string; action: string }>;
  let admin: AdminClient;

  beforeEach(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-noop-'));
    dirs.push(dir);
    path = join(dir, 'tollgate.config.yaml');
    writeFileSync(path, yaml(11_000));
    tg = await startGateway(parseConfigText(readFileSync(path, 'utf8'), path), {}, { configPath: path });
    events = [];
    tg.gateway.bus.on('config.changed', (event) => events.push(event));
    admin = new AdminClient(tg.url);
  });
  afterEach(async () => {
    await tg.stop();
  });

  const version = (): number => tg.gateway.configService.current().version;
  const fileAudits = async (): Promise<unknown[]> => (await admin.get('/api/audit?limit=50')).body.data.filter((entry: any) => entry.action === 'file.reloaded');

  it('makes no new version for the same content, rewritten in place or saved atomically', async () => {
    const start = version();
    writeFileSync(path, yaml(11_000));
    await settle();
    saveAtomically(path, yaml(11_000));
    await settle();
    // A real change after them: once it is applied, the saves before it were looked at too.
    saveAtomically(path, yaml(12_000));
    await until(() => tg.gateway.configService.current().providers.get('lab')?.timeouts.firstByteMs === 12_000);
    expect(version()).toBe(start + 1);
    expect(events.map((event) => event.version)).toEqual([start + 1]);
    expect(await fileAudits()).toHaveLength(1);
  });

  it('makes no new version when only comments, whitespace or key order change', async () => {
    const start = version();
    const running = tg.gateway.configService.current();
    saveAtomically(path, `${yaml(11_000, 'reviewed by ops').replace('providers:', '\n\nproviders:   # the only one')}\n\n# end\n`);
    await settle();
    saveAtomically(path, ['providers:', '  lab:', `    base_url: ${upstream.url}/v1`, '    timeouts: { first_byte_ms: 11000 }', '    api_key: sk-lab-key', '    type: openai', ''].join('\n'));
    await settle();
    // The running config is the very same object: nothing was rebuilt.
    expect(tg.gateway.configService.current()).toBe(running);
    saveAtomically(path, yaml(12_000));
    await until(() => version() > start);
    expect(version()).toBe(start + 1);
    expect(events).toHaveLength(1);
    expect(await fileAudits()).toHaveLength(1);
  });

  it('clears a rejection when the file is saved back as the running config, without a new version', async () => {
    const start = version();
    saveAtomically(path, 'providers: [not, a, map]\n');
    await until(async () => (await admin.get('/api/config')).body.file_rejection !== null);
    saveAtomically(path, yaml(11_000));
    await until(async () => (await admin.get('/api/config')).body.file_rejection === null);
    expect(version()).toBe(start);
    expect(events).toHaveLength(0);
    expect(await fileAudits()).toHaveLength(0);
  });
});

describe('admin API writes of the same config', () => {
  let tg: RunningGateway;
  let admin: AdminClient;

  beforeEach(async () => {
    tg = await startGateway({});
    admin = new AdminClient(tg.url);
  });
  afterEach(async () => {
    await tg.stop();
  });

  const body = () => ({ providers: { lab: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-lab-key' } }, routes: { fast: { targets: [{ model: 'lab/m' }] } } });
  const auditCount = async (): Promise<number> => (await admin.get('/api/audit?limit=50')).body.data.length;

  it('PUT /api/config with the same document twice makes one version and one audit entry', async () => {
    const first = await admin.put('/api/config', body());
    expect(first.status).toBe(200);
    const again = await admin.put('/api/config', body());
    expect(again.status).toBe(200);
    expect(again.body.version).toBe(first.body.version);
    expect(again.body.providers.find((p: any) => p.name === 'lab').keys).toEqual(first.body.providers.find((p: any) => p.name === 'lab').keys);
    expect(await auditCount()).toBe(1);
  });

  it('PATCH /api/config with what is already set, or with {}, changes nothing', async () => {
    const first = await admin.put('/api/config', body());
    const patch = { providers: { lab: { base_url: `${upstream.url}/v1` } } };
    const same = await admin.patch('/api/config', patch, { contentType: 'application/merge-patch+json' });
    expect(same.status).toBe(200);
    const empty = await admin.patch('/api/config', {}, { contentType: 'application/merge-patch+json' });
    expect(empty.status).toBe(200);
    expect(empty.body.version).toBe(first.body.version);
    expect(await auditCount()).toBe(1);
    // A real change still is one.
    const changed = await admin.patch('/api/config', { routes: { fast: { targets: [{ model: 'lab/other' }] } } }, { contentType: 'application/merge-patch+json' });
    expect(changed.body.version).toBe(first.body.version + 1);
    expect(await auditCount()).toBe(2);
  });

  it('PUT /api/providers/{name} with the same body twice is one change', async () => {
    const provider = { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-lab-key' };
    const created = await admin.put('/api/providers/lab', provider);
    expect(created.status).toBe(201);
    const before = tg.gateway.configService.current().version;
    const again = await admin.put('/api/providers/lab', provider);
    expect(again.status).toBe(200);
    expect(again.body.keys).toEqual(created.body.keys);
    expect(tg.gateway.configService.current().version).toBe(before);
    expect(await auditCount()).toBe(1);
  });
});
