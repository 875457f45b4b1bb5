import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRecords } from '../../src/store/records.js';
import { AdminClient } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// An operator regex whose repetitions in a row can take the same characters (`\S+@\S+\.com`) passed the config's
// backtracking check; one 20 KB prompt of `@` then held the gateway's event loop ~10 s, every other request with it.
// It is refused where it is written now (the config, a key), and accepted under a max_match_length that keeps it cheap.

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const { api } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

describe('operator patterns that backtrack polynomially', () => {
  it('are refused in the live config and on a key, naming the pattern', async () => {
    const admin = new AdminClient(tg.url);
    const refused = await admin.patch('/api/config', { guardrails: { rules: [{ name: 'mails', kind: 'regex', patterns: ['\\S+@\\S+\\.com'], action: 'redact' }] } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('guardrails.rules');
    expect(refused.body.error.message).toContain('\\\\S+@\\\\S+\\\\.com');
    expect(refused.body.error.message).toContain('polynomial');

    const key = await api('POST', '/api/keys', { name: 'k', guardrails: { rules: [{ name: 'r', kind: 'regex', patterns: ['\\w+\\s?\\w+!'], action: 'block' }] } });
    expect(key.status).toBe(400);
    expect(JSON.stringify(key.body)).toContain('polynomial');
  });

  it('run under a small max_match_length: the rule works and a hostile prompt is answered promptly', async () => {
    const admin = new AdminClient(tg.url);
    const rules = [{ name: 'mails', kind: 'regex', patterns: ['\\S+@\\S+\\.com'], action: 'redact', max_match_length: 24 }];
    expect((await admin.patch('/api/config', { guardrails: { rules } })).status).toBe(200);
    const redacted = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'write to a@b.com' }] });
    expect(redacted.choices[0]?.message.content).toBe('echo: write to [REDACTED:regex]');
    const started = Date.now();
    const hostile = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: '@'.repeat(20_000) }] });
    expect(hostile.choices[0]?.message.content).toContain('@@@');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('stored on a key by an earlier version (before this check), keeps running for the key instead of failing its requests', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-redos-stored-'));
    const config = { providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } };
    let first: RunningGateway | null = await startGateway(config, {}, { dataDir });
    let second: RunningGateway | null = null;
    try {
      const created = await new AdminClient(first.url).post('/api/keys', { name: 'old', guardrails: { rules: [{ name: 'mails', kind: 'regex', patterns: ['[^\\s@]+@[^\\s@]+\\.com'], action: 'redact' }] } });
      expect(created.status).toBe(201);
      await first.stop();
      first = null;
      // The record as an earlier version wrote it: a pattern this check now refuses.
      const root = open({ path: join(dataDir, 'tollgate.lmdb'), maxDbs: 48, compression: false });
      const keys = openRecords<Record<string, any>, string>(root, { name: 'keys' });
      const record = keys.get(created.body.id) as Record<string, any>;
      record.guardrails.rules[0].patterns = ['\\S+@\\S+\\.com'];
      await keys.put(created.body.id, record);
      await root.close();

      second = await startGateway(config, {}, { dataDir });
      const client = new OpenAI({ baseURL: `${second.url}/v1`, apiKey: created.body.key, maxRetries: 0 });
      const answer = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'write to a@b.com' }] });
      expect(answer.choices[0]?.message.content).toBe('echo: write to [REDACTED:regex]');
    } finally {
      await first?.stop();
      await second?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
