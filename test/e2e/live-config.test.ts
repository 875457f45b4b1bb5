import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, renameSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import type { GatewayEvents } from '../../src/core/events.js';

let a: ScriptedUpstream;
let b: ScriptedUpstream;
const dirs: string[] = [];

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

beforeAll(async () => {
  a = await startOpenAIUpstream({ apiKey: null });
  b = await startOpenAIUpstream({ apiKey: null });
});
afterAll(async () => {
  await a.close();
  await b.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  a.reset();
  b.reset();
});

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

/** Writes the file the way editors do: a new file renamed over the old one. */
function saveAtomically(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

/**
 * A Kubernetes ConfigMap volume as the kubelet lays it out and updates it: the file is a symlink through `..data` to
 * a timestamped folder; an update writes a new folder and renames a new `..data_tmp` symlink over `..data`.
 */
function configMapVolume(dir: string, file: string, text: string): { path: string; update(text: string): void } {
  let generation = 0;
  const writeGeneration = (content: string): string => {
    const folder = `..2026_11_25_00_00_0${generation++}`;
    mkdirSync(join(dir, folder));
    writeFileSync(join(dir, folder, file), content);
    return folder;
  };
  symlinkSync(writeGeneration(text), join(dir, '..data'));
  symlinkSync(join('..data', file), join(dir, file));
  return {
    path: join(dir, file),
    update(content: string) {
      symlinkSync(writeGeneration(content), join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    },
  };
}

function labYaml(baseUrl: string): string {
  return ['providers:', '  lab:', '    type: openai', `    base_url: ${baseUrl}/v1`, ''].join('\n');
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((done) => setTimeout(done, 20));
  }
}

describe('config file changes apply without a restart', () => {
  let tg: RunningGateway;
  let path: string;

  beforeEach(async () => {
    path = join(tempDir('tollgate-watch-'), 'tollgate.config.yaml');
    writeFileSync(path, labYaml(a.url));
    const { parseConfigText } = await import('../../src/config/load-file.js');
    tg = await startGateway(parseConfigText(readFileSync(path, 'utf8'), path), {}, { configPath: path });
  });
  afterEach(async () => {
    await tg.stop();
  });

  it('moves traffic to a new base URL while requests flow, with no failed request', async () => {
    const versions: number[] = [];
    tg.gateway.bus.on('config.changed', (event) => versions.push(event.version));
    let failures = 0;
    let sent = 0;
    let stop = false;
    const load = (async () => {
      while (!stop) {
        sent++;
        await tg.client.chat.completions.create({ model: 'lab/m', messages }).catch(() => failures++);
      }
    })();
    await until(() => a.calls.length >= 5);
    saveAtomically(path, labYaml(b.url));
    await until(() => b.calls.length >= 5);
    stop = true;
    await load;
    expect(failures).toBe(0);
    expect(versions.length).toBeGreaterThanOrEqual(1);
    // After the switch every request goes to b.
    const before = a.calls.length;
    await tg.client.chat.completions.create({ model: 'lab/m', messages });
    expect(a.calls.length).toBe(before);
    expect(sent).toBeGreaterThan(10);
  });

  it('follows a Kubernetes ConfigMap update (the ..data symlink swapped, the file\'s name never in the events)', async () => {
    const volume = configMapVolume(tempDir('tollgate-configmap-'), 'config.yaml', labYaml(a.url));
    const { parseConfigText } = await import('../../src/config/load-file.js');
    const mounted = await startGateway(parseConfigText(readFileSync(volume.path, 'utf8'), volume.path), {}, { configPath: volume.path });
    try {
      await mounted.client.chat.completions.create({ model: 'lab/m', messages });
      expect(a.calls).toHaveLength(1);
      volume.update(labYaml(b.url));
      await until(() => mounted.gateway.configService.current().providers.get('lab')?.baseUrl === `${b.url}/v1`);
      await mounted.client.chat.completions.create({ model: 'lab/m', messages });
      expect(b.calls).toHaveLength(1);
    } finally {
      await mounted.stop();
    }
  });

  it('reads a file: key again when its file changes (a Kubernetes Secret volume updated), the config file untouched', async () => {
    const secret = configMapVolume(tempDir('tollgate-secret-'), 'lab-key', 'sk-first-0001\n');
    const configPath = join(tempDir('tollgate-keyed-'), 'tollgate.config.yaml');
    writeFileSync(configPath, `${labYaml(a.url)}    api_key: file:${secret.path}\n`);
    const { parseConfigText } = await import('../../src/config/load-file.js');
    const keyed = await startGateway(parseConfigText(readFileSync(configPath, 'utf8'), configPath), {}, { configPath });
    try {
      const versions: Array<GatewayEvents['config.changed']> = [];
      keyed.gateway.bus.on('config.changed', (event) => versions.push(event));
      await keyed.client.chat.completions.create({ model: 'lab/m', messages });
      secret.update('sk-second-0002\n');
      await until(() => keyed.gateway.configService.current().providers.get('lab')?.keys[0]?.value === 'sk-second-0002');
      await keyed.client.chat.completions.create({ model: 'lab/m', messages });
      expect(a.calls.map((call) => call.headers.authorization)).toEqual(['Bearer sk-first-0001', 'Bearer sk-second-0002']);
      expect(versions).toHaveLength(1);
      expect(versions[0]).toMatchObject({ source: 'file', action: 'file.reloaded' });
    } finally {
      await keyed.stop();
    }
  });

  it('watches a file: key from the save that names it on', async () => {
    const secret = configMapVolume(tempDir('tollgate-secret-'), 'lab-key', 'sk-named-later-0003\n');
    saveAtomically(path, `${labYaml(a.url)}    api_key: file:${secret.path}\n`);
    await until(() => tg.gateway.configService.current().providers.get('lab')?.keys[0]?.value === 'sk-named-later-0003');
    secret.update('sk-renewed-0004\n');
    await until(() => tg.gateway.configService.current().providers.get('lab')?.keys[0]?.value === 'sk-renewed-0004');
  });

  it('says so when a save is refused for a part set through the API, which the file cannot change', async () => {
    expect(tg.gateway.configService.current().providers.has('lab')).toBe(true);
    const put = await fetch(`${tg.url}/api/routes/on-lab`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ targets: [{ model: 'lab/m' }] }) });
    expect(put.status).toBe(201);
    saveAtomically(path, '{}\n');
    await until(() => tg.gateway.configService.fileRejection() !== null);
    const reason = tg.gateway.configService.fileRejection()?.reason ?? '';
    expect(reason).toContain('routes.on-lab.targets.0.model: unknown provider "lab"');
    expect(reason).toContain('routes.on-lab is set through the API');
    expect(tg.gateway.configService.current().providers.has('lab')).toBe(true);
  });

  it('keeps the running config when the file is broken, and applies the next good save', async () => {
    saveAtomically(path, 'providers:\n  lab:\n    type: openai\n    base_url: not a url\n');
    await new Promise((done) => setTimeout(done, 400));
    await tg.client.chat.completions.create({ model: 'lab/m', messages });
    expect(a.calls).toHaveLength(1);
    saveAtomically(path, 'providers: [unclosed');
    await new Promise((done) => setTimeout(done, 400));
    await tg.client.chat.completions.create({ model: 'lab/m', messages });
    expect(a.calls).toHaveLength(2);
    saveAtomically(path, labYaml(b.url));
    await until(() => tg.gateway.configService.current().providers.get('lab')?.baseUrl === `${b.url}/v1`);
    await tg.client.chat.completions.create({ model: 'lab/m', messages });
    expect(b.calls).toHaveLength(1);
    const audit = tg.gateway.configService.audit({ limit: 5 });
    expect(audit[0]).toMatchObject({ action: 'file.reloaded', actor: { kind: 'file', id: path } });
  });

  it('keeps the running config while a save is half done: the file truncated, its text written later', async () => {
    const versions: number[] = [];
    tg.gateway.bus.on('config.changed', (event) => versions.push(event.version));
    // An editor or `cat > file` that truncates in place, then writes after a pause longer than the debounce.
    writeFileSync(path, '');
    // Refused after a second look (the debounce, then 250 ms more), while the running config stays.
    await until(() => tg.gateway.configService.fileRejection() !== null);
    expect(versions).toEqual([]);
    await tg.client.chat.completions.create({ model: 'lab/m', messages });
    expect(a.calls).toHaveLength(1);
    const health = (await (await fetch(`${tg.url}/health`)).json()) as { config_file_rejection: { reason: string } | null };
    expect(health.config_file_rejection?.reason).toContain('empty');
    writeFileSync(path, labYaml(b.url));
    await until(() => tg.gateway.configService.current().providers.get('lab')?.baseUrl === `${b.url}/v1`);
    expect(versions).toHaveLength(1);
    expect(tg.gateway.configService.fileRejection()).toBeNull();
  });

  it('refuses nothing when a save is held apart between its truncation and its write for longer than the debounce', async () => {
    // A loaded machine can hold a non-atomic save's two steps apart: the file is looked at once more before an empty
    // one is refused, so the operator's log does not report a rejection of a save that then lands.
    const versions: number[] = [];
    tg.gateway.bus.on('config.changed', (event) => versions.push(event.version));
    // Every rejection the gateway records shows in fileRejection() until a later save is accepted: watched closely.
    const rejected: unknown[] = [];
    const watching = setInterval(() => {
      const rejection = tg.gateway.configService.fileRejection();
      if (rejection) rejected.push(rejection);
    }, 5);
    writeFileSync(path, '');
    await new Promise((done) => setTimeout(done, 180));
    writeFileSync(path, labYaml(b.url));
    await until(() => tg.gateway.configService.current().providers.get('lab')?.baseUrl === `${b.url}/v1`);
    await new Promise((done) => setTimeout(done, 400));
    expect(versions).toHaveLength(1);
    expect(tg.gateway.configService.fileRejection()).toBeNull();
    clearInterval(watching);
    expect(rejected).toEqual([]);
  });

  it('lets a request in flight finish on the config it started with', async () => {
    a.enqueue({ kind: 'slow-chunks', delayMs: 100 });
    const stream = await tg.client.chat.completions.create({
      model: 'lab/m',
      messages: [{ role: 'user', content: 'one two three four five' }],
      stream: true,
    });
    let text = '';
    let switched = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (!switched) {
        switched = true;
        saveAtomically(path, labYaml(b.url));
        await until(() => tg.gateway.configService.current().providers.get('lab')?.baseUrl === `${b.url}/v1`);
      }
    }
    expect(text).toBe('echo: one two three four five');
    await tg.client.chat.completions.create({ model: 'lab/m', messages });
    expect(b.calls).toHaveLength(1);
  });
});

describe('provider keys in the file', () => {
  it("keep their breakers when another key is taken out of the list: a key's breaker is its own", async () => {
    const path = join(tempDir('tollgate-keys-'), 'tollgate.config.yaml');
    const yaml = (keys: string[]) =>
      [
        'settings:',
        '  routing: { retry: { max_attempts: 1 }, breaker: { consecutive_failures: 1, cooldown_ms: 60000 } }',
        'providers:',
        '  lab:',
        '    type: openai',
        `    base_url: ${a.url}/v1`,
        '    keys:',
        ...keys.map((key) => `      - { value: ${key} }`),
        '',
      ].join('\n');
    writeFileSync(path, yaml(['sk-one', 'sk-two']));
    const { parseConfigText } = await import('../../src/config/load-file.js');
    const tg = await startGateway(parseConfigText(readFileSync(path, 'utf8'), path), {}, { configPath: path });
    try {
      a.setMode({ kind: 'error', status: 500 });
      // One failure opens a key's breaker: the first request opens one key's, the second the other's.
      for (let i = 0; i < 2; i++) await expect(tg.client.chat.completions.create({ model: 'lab/m', messages })).rejects.toMatchObject({ status: 500 });
      await expect(tg.client.chat.completions.create({ model: 'lab/m', messages })).rejects.toMatchObject({ status: 503 });
      expect(a.calls).toHaveLength(2);

      // The revoked sk-one leaves the file; sk-two is the same key, its breaker still open.
      saveAtomically(path, yaml(['sk-two']));
      await until(() => tg.gateway.configService.current().providers.get('lab')?.keys.length === 1);
      await expect(tg.client.chat.completions.create({ model: 'lab/m', messages })).rejects.toMatchObject({ status: 503, code: 'all_targets_unavailable' });
      expect(a.calls).toHaveLength(2);
    } finally {
      await tg.stop();
    }
  });
});

describe('routes', () => {
  it('spreads a route over its targets by weight and echoes the route name', async () => {
    const tg = await startGateway({
      providers: { pa: { type: 'openai', base_url: `${a.url}/v1` }, pb: { type: 'openai', base_url: `${b.url}/v1` } },
      routes: { 'chat-default': { targets: [{ model: 'pa/heavy', weight: 3 }, { model: 'pb/light', weight: 1 }], fallbacks: [] } },
    });
    try {
      const total = 400;
      for (let i = 0; i < total; i += 20) {
        await Promise.all(
          Array.from({ length: 20 }, async () => {
            const completion = await tg.client.chat.completions.create({ model: 'chat-default', messages });
            expect(completion.model).toBe('chat-default');
          }),
        );
      }
      const share = a.calls.length / total;
      expect(a.calls.length + b.calls.length).toBe(total);
      expect(share).toBeGreaterThan(0.68);
      expect(share).toBeLessThan(0.82);
      expect(a.calls.every((call) => call.body.model === 'heavy')).toBe(true);
    } finally {
      await tg.stop();
    }
  });

  it('falls back along the chain when a target fails with a retryable error, and not on a client error', async () => {
    const tg = await startGateway({
      providers: { pa: { type: 'openai', base_url: `${a.url}/v1` }, pb: { type: 'openai', base_url: `${b.url}/v1` } },
      routes: { resilient: { targets: [{ model: 'pa/first', weight: 1 }], fallbacks: ['pb/second'] } },
    });
    try {
      const fallbacks: Array<GatewayEvents['fallback.used']> = [];
      tg.gateway.bus.on('fallback.used', (event) => fallbacks.push(event));
      a.enqueue({ kind: 'error', status: 503, message: 'overloaded' });
      const { data, response } = await tg.client.chat.completions.create({ model: 'resilient', messages }).withResponse();
      expect(data.choices[0]?.message.content).toBe('echo: hi');
      expect(response.headers.get('x-tollgate-provider')).toBe('pb');
      expect(response.headers.get('x-tollgate-attempts')).toBe('2');
      expect(b.calls[0]?.body.model).toBe('second');
      expect(fallbacks).toEqual([expect.objectContaining({ from: 'pa/first', to: 'pb/second' })]);

      a.enqueue({ kind: 'error', status: 400, message: 'bad field' });
      await expect(tg.client.chat.completions.create({ model: 'resilient', messages })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
      expect(b.calls).toHaveLength(1);
    } finally {
      await tg.stop();
    }
  });
});

describe('route patterns', () => {
  it('routes every model matching a pattern, carrying the matched part into targets written with *', async () => {
    const tg = await startGateway({
      providers: { pa: { type: 'openai', base_url: `${a.url}/v1` }, pb: { type: 'openai', base_url: `${b.url}/v1` } },
      routes: {
        'openai/*': { targets: [{ model: 'pa/*', weight: 1 }], fallbacks: ['pb/*'] },
        'openai/gpt-4o-mini': { targets: [{ model: 'pb/exact-wins', weight: 1 }] },
      },
    });
    try {
      const completion = await tg.client.chat.completions.create({ model: 'openai/gpt-4.1', messages });
      expect(completion.model).toBe('openai/gpt-4.1');
      expect(a.calls[0]?.body.model).toBe('gpt-4.1');
      await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
      expect(b.calls[0]?.body.model).toBe('exact-wins');
      a.enqueue({ kind: 'error', status: 502, message: 'down' });
      await tg.client.chat.completions.create({ model: 'openai/o3', messages });
      expect(b.calls[1]?.body.model).toBe('o3');
    } finally {
      await tg.stop();
    }
  });

  it('refuses a route name with more than one *', async () => {
    await expect(startGateway({ routes: { '*/*': { targets: [{ model: 'openai/x', weight: 1 }] } } })).rejects.toThrow(/routes\.\*\/\*/);
  });
});

describe('API changes', () => {
  it('apply settings such as the body size limit to the next request', async () => {
    const tg = await startGateway({ settings: { max_body_bytes: 2000 }, providers: { lab: { type: 'openai', base_url: `${a.url}/v1` } } });
    try {
      const big = { model: 'lab/m', messages: [{ role: 'user' as const, content: 'z'.repeat(3000) }] };
      await expect(tg.client.chat.completions.create(big)).rejects.toMatchObject({ status: 413 });
      await tg.gateway.configService.patchApiLayer({ settings: { max_body_bytes: 10_000 } }, { kind: 'loopback', id: '127.0.0.1' });
      const completion = await tg.client.chat.completions.create(big);
      expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(3000);
    } finally {
      await tg.stop();
    }
  });

  it('persist across a restart, with provider keys sealed at rest', async () => {
    const dataDir = tempDir('tollgate-persist-');
    const secret = 'sk-persisted-secret-value-1234';
    const first = await startGateway({}, {}, { dataDir });
    const actor = { kind: 'loopback' as const, id: '127.0.0.1' };
    await first.gateway.configService.putProvider('lab', { type: 'openai', base_url: `${a.url}/v1`, keys: [{ value: secret }] }, actor);
    await first.gateway.configService.putRoute('team-chat', { targets: [{ model: 'lab/m', weight: 1 }] }, actor);
    await first.client.chat.completions.create({ model: 'team-chat', messages });
    expect(a.calls[0]?.headers.authorization).toBe(`Bearer ${secret}`);
    await first.stop();

    for (const file of readdirSync(dataDir, { recursive: true }) as string[]) {
      if (!statSync(join(dataDir, file)).isFile()) continue;
      const bytes = readFileSync(join(dataDir, file), { flag: 'r' }).toString('latin1');
      expect(bytes.includes(secret)).toBe(false);
    }

    const second = await startGateway({}, {}, { dataDir });
    try {
      await second.client.chat.completions.create({ model: 'team-chat', messages });
      expect(a.calls[1]?.headers.authorization).toBe(`Bearer ${secret}`);
      expect(JSON.stringify(second.gateway.configService.describe())).not.toContain(secret);
      expect(second.gateway.configService.getProvider('lab').keys[0]?.value).toBe('****1234');
    } finally {
      await second.stop();
    }
  });
});
