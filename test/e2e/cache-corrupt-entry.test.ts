import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A cache entry that cannot be read (a damaged page, a record written by a build whose shapes this one does not
// know) must cost its request a miss, never the answer: the cache is an optimisation, and before the lookup was
// synchronous its failure was a 500 for every request that asked the same question, for as long as the entry lived.

const ask = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content }], ...extra });

/** Bytes msgpack never begins a value with (0xc1 is reserved): the record decoder throws on them. */
const GARBAGE = Buffer.from([0xc1, 0xc1, 0xc1, 0xc1]);

describe('a cache entry that cannot be read', () => {
  let upstream: ScriptedUpstream;
  let gateway: RunningGateway;
  let dataDir: string;

  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    dataDir = mkdtempSync(join(tmpdir(), 'tollgate-cache-corrupt-'));
    gateway = await startGateway(openAIConfig(upstream.url, { cache: { mode: 'on' } }), {}, { dataDir });
  });

  afterAll(async () => {
    await gateway.stop();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Asks, waits for the answer to be stored, then overwrites every stored entry's record with bytes that do not decode. */
  async function storeAndDamage(question: string): Promise<void> {
    const stored = new Promise<void>((resolve) => {
      const stop = gateway.gateway.bus.on('cache.stored', () => {
        stop();
        resolve();
      });
    });
    const first = await gateway.client.chat.completions.create(ask(question)).withResponse();
    expect(first.response.headers.get('x-tollgate-cache')).toBe('miss');
    await stored;
    const root = gateway.gateway.store.root;
    const raw = root.openDB<Buffer, number>({ name: 'cache-entries', encoding: 'binary' });
    const ids = [...raw.getKeys()].filter((id): id is number => typeof id === 'number');
    expect(ids.length).toBeGreaterThan(0);
    await root.transaction(() => {
      for (const id of ids) void raw.put(id, GARBAGE);
    });
  }

  it('is a miss for the exact tier, answered by the provider, whose answer then takes its place', async () => {
    await storeAndDamage('How many legs does a spider have?');
    const calls = upstream.calls.length;
    const restored = new Promise<void>((resolve) => {
      const stop = gateway.gateway.bus.on('cache.stored', () => {
        stop();
        resolve();
      });
    });
    const stream = await gateway.client.chat.completions.create({ ...ask('How many legs does a spider have?'), stream: true }).withResponse();
    expect(stream.response.headers.get('x-tollgate-cache')).toBe('miss');
    let text = '';
    for await (const chunk of stream.data) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: How many legs does a spider have?');
    expect(upstream.calls.length).toBe(calls + 1);
    // The provider's new answer takes the damaged one's place, and is served from the cache from then on.
    await restored;
    const hit = await gateway.client.chat.completions.create(ask('How many legs does a spider have?')).withResponse();
    expect(hit.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(hit.data.choices[0]?.message.content).toBe('echo: How many legs does a spider have?');
    expect(upstream.calls.length).toBe(calls + 1);
    // The gateway still answers everything else.
    expect((await gatewayApi(() => gateway.url).api('GET', '/api/cache')).status).toBe(200);
  });

  it('is skipped by the semantic tier, which answers from the provider', async () => {
    const { api } = gatewayApi(() => gateway.url);
    for (let i = 0; i < 400; i++) {
      const report = (await api('GET', '/api/cache')).body;
      if (report.semantic_index.state === 'ready' && report.embedder.state === 'ready') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await storeAndDamage('What is the capital of France?');
    const calls = upstream.calls.length;
    const paraphrase = await gateway.client.chat.completions.create(ask("Tell me France's capital city")).withResponse();
    expect(paraphrase.response.headers.get('x-tollgate-cache')).toBe('miss');
    expect(paraphrase.data.choices[0]?.message.content).toBe("echo: Tell me France's capital city");
    expect(upstream.calls.length).toBe(calls + 1);
  });
});

// Paths that read every entry (the semantic index's rebuild at start, a delete by model, key or team) must step over
// one damaged record too: before, the rebuild's failure turned the semantic tier off for the process's life and the
// admin delete answered 500.
describe('a cache entry that cannot be read, met by what reads every entry', () => {
  it('costs only itself: the semantic index is rebuilt without it and a delete by model removes it with the rest', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-cache-corrupt-all-'));
    const config = openAIConfig(upstream.url, { cache: { mode: 'on' } });
    let gateway = await startGateway(config, {}, { dataDir });
    const semanticReady = async (): Promise<Record<string, unknown>> => {
      const { api } = gatewayApi(() => gateway.url);
      let report = (await api('GET', '/api/cache')).body;
      for (let i = 0; i < 400; i++) {
        if (report.semantic_index.state !== 'loading' && report.embedder.state === 'ready') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
        report = (await api('GET', '/api/cache')).body;
      }
      return report;
    };
    try {
      const questions = ['What is the capital of France?', 'What is the capital of Italy?', 'How many legs does a spider have?'];
      for (const question of questions) {
        const stored = new Promise<void>((resolve) => {
          const stop = gateway.gateway.bus.on('cache.stored', () => {
            stop();
            resolve();
          });
        });
        await gateway.client.chat.completions.create(ask(question));
        await stored;
      }
      // The first answer's record is damaged; the index file goes, so the next start rebuilds it from the store.
      const root = gateway.gateway.store.root;
      const raw = root.openDB<Buffer, number>({ name: 'cache-entries', encoding: 'binary' });
      const ids = [...raw.getKeys()].filter((id): id is number => typeof id === 'number');
      expect(ids.length).toBe(3);
      await root.transaction(() => void raw.put(Math.min(...ids), GARBAGE));
      await gateway.stop();
      for (const name of readdirSync(join(dataDir, 'cache'))) rmSync(join(dataDir, 'cache', name));
      gateway = await startGateway(config, {}, { dataDir });
      await gateway.client.chat.completions.create(ask('What is the capital of Italy?'));

      const report = await semanticReady();
      expect(report.semantic_index).toMatchObject({ state: 'ready', vectors: 2 });
      const paraphrase = await gateway.client.chat.completions.create(ask("Tell me Italy's capital city")).withResponse();
      expect(paraphrase.response.headers.get('x-tollgate-cache')).toBe('hit-semantic');

      // The rebuild removed the damaged record. Another is damaged now: a delete by model reads every entry, and the
      // readable one goes, and the damaged one (nobody's answer any more) too.
      const { api } = gatewayApi(() => gateway.url);
      expect((await api('GET', '/api/cache')).body.entries).toBe(2);
      const live = gateway.gateway.store.root;
      const records = live.openDB<Buffer, number>({ name: 'cache-entries', encoding: 'binary' });
      const left = [...records.getKeys()].filter((id): id is number => typeof id === 'number');
      await live.transaction(() => void records.put(Math.max(...left), GARBAGE));
      const deleted = await api('DELETE', '/api/cache?model=openai/gpt-4o-mini');
      expect(deleted.status).toBe(200);
      expect(deleted.body.deleted).toBe(1);
      expect((await api('GET', '/api/cache')).body.entries).toBe(0);
      const again = await gateway.client.chat.completions.create(ask('What is the capital of Italy?')).withResponse();
      expect(again.response.headers.get('x-tollgate-cache')).toBe('miss');
    } finally {
      await gateway.stop();
      await upstream.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

// A damaged record removed alone (its index rows cannot be found from it) left its row in the recency index: eviction
// chose it again each round, removed nothing, and under a small max_entries spun for ever while the cache grew past it.
describe('a cache entry that cannot be read, met by eviction', () => {
  it('goes with its index rows, so eviction keeps the cache at max_entries', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startGateway(openAIConfig(upstream.url, { cache: { mode: 'on', max_entries: 3, semantic: { enabled: false } } }));
    const { api } = gatewayApi(() => gateway.url);
    const storeAnswer = async (question: string): Promise<void> => {
      const stored = new Promise<void>((resolve) => {
        const stop = gateway.gateway.bus.on('cache.stored', () => {
          stop();
          resolve();
        });
      });
      await gateway.client.chat.completions.create(ask(question));
      await stored;
    };
    const settledEntries = async (): Promise<number> => {
      let entries = (await api('GET', '/api/cache')).body.entries as number;
      for (let i = 0; i < 40 && entries > 3; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        entries = (await api('GET', '/api/cache')).body.entries as number;
      }
      return entries;
    };
    try {
      for (const question of ['one?', 'two?', 'three?']) await storeAnswer(question);
      const root = gateway.gateway.store.root;
      const raw = root.openDB<Buffer, number>({ name: 'cache-entries', encoding: 'binary' });
      const ids = [...raw.getKeys()].filter((id): id is number => typeof id === 'number');
      await root.transaction(() => void raw.put(Math.min(...ids), GARBAGE));
      // The first answer past the cap evicts the damaged (least recently used) record; the next ones must evict too.
      for (const question of ['four?', 'five?', 'six?']) {
        await storeAnswer(question);
        expect(await settledEntries()).toBe(3);
      }
      const hit = await gateway.client.chat.completions.create(ask('six?')).withResponse();
      expect(hit.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  }, 30_000);
});

// A damaged record is met by every lookup that asks its question until an answer takes its place (or maintenance
// removes it): each of those lookups logged a warning with the decoder's stack, so a popular question under load
// filled the log with the same line many times a second.
describe('a cache entry that cannot be read, met by many lookups', () => {
  it('is logged once, and is a miss every time', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const gateway = await startGateway(
      openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { enabled: false } }, settings: { routing: { retry: { max_attempts: 1 } } } }),
      {},
      { log: pino({ level: 'warn' }, sink) },
    );
    try {
      const stored = new Promise<void>((resolve) => {
        const stop = gateway.gateway.bus.on('cache.stored', () => {
          stop();
          resolve();
        });
      });
      await gateway.client.chat.completions.create(ask('How many moons has Mars?'));
      await stored;
      const root = gateway.gateway.store.root;
      const raw = root.openDB<Buffer, number>({ name: 'cache-entries', encoding: 'binary' });
      const ids = [...raw.getKeys()].filter((id): id is number => typeof id === 'number');
      await root.transaction(() => {
        for (const id of ids) void raw.put(id, GARBAGE);
      });
      // The provider fails meanwhile, so no new answer replaces the damaged one: every request looks it up again.
      for (let i = 0; i < 5; i++) {
        upstream.enqueue({ kind: 'error', status: 500 });
        const failed = await gateway.client.chat.completions.create(ask('How many moons has Mars?')).catch((err: unknown) => err);
        expect(failed).toMatchObject({ status: 500 });
      }
      const warnings = lines.filter((line) => line.includes('could not be read'));
      expect(warnings).toHaveLength(1);
      expect(JSON.parse(warnings[0] as string)).toMatchObject({ entryId: ids[0] });
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  }, 30_000);
});
