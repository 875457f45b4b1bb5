// The memory budget of a gateway process: RSS at idle after start (cache off, and cache on with its embedder loaded),
// and RSS per 1,000 concurrent open streams (N streams held open at once: the upstream waits between chunks, so every
// stream stays open until the bench reads it to the end). Figures from /proc/<pid>/status, after the process settled.
//
//   npm run bench:memory -- [--streams 1000]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { statusBytes } from '../test/soak/process-sampler.js';
import { freePort } from '../test/helpers/net.js';
import { startOpenAIUpstream } from '../test/upstream/openai-upstream.js';
import { pollUntil, prepareGateway, spawnGateway, type GatewayProcess } from './gateway-process.js';

const { values } = parseArgs({ options: { streams: { type: 'string', default: '1000' } } });
const streams = Number(values.streams);
const MB = 1024 * 1024;
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

await prepareGateway();
const upstream = await startOpenAIUpstream({ apiKey: 'sk-memory', chunkDelayMs: 0, record: false });
const work = mkdtempSync(join(tmpdir(), 'tollgate-memory-'));

interface Memory {
  rss: number;
  anon: number;
}

/** RSS after the process had a moment to settle: the lowest of a few readings over a second. */
async function settledMemory(pid: number): Promise<Memory> {
  const readings: Memory[] = [];
  for (let i = 0; i < 5; i++) {
    readings.push({ rss: statusBytes(pid, 'VmRSS'), anon: statusBytes(pid, 'RssAnon') });
    await sleep(250);
  }
  return { rss: Math.min(...readings.map((r) => r.rss)), anon: Math.min(...readings.map((r) => r.anon)) };
}

async function start(name: string, cache: boolean): Promise<GatewayProcess> {
  const configPath = join(work, `${name}.json`);
  writeFileSync(configPath, JSON.stringify({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-memory' } },
    ...(cache ? { cache: { mode: 'on', semantic: { enabled: true } } } : {}),
  }));
  const gateway = spawnGateway({ cwd: work, port: await freePort(), dataDir: join(work, `${name}-data`), configPath });
  await pollUntil(async () => ((await (await fetch(`${gateway.url}/health`)).json()) as { loading: string[] }).loading.length === 0, 120_000, 50);
  // One request so the lazily loaded parts of the request path are in, as on a gateway that has served.
  const res = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'warm' }] }) });
  await res.text();
  await sleep(1000);
  return gateway;
}

/** Opens N streams at once; each answers its headers and first chunk, then the upstream waits 30 s per chunk. */
async function holdStreams(gateway: GatewayProcess, n: number): Promise<{ during: Memory; open: number; release: () => Promise<void> }> {
  const agent = new Agent({ connections: n + 10, keepAliveTimeout: 1_000 });
  const bodies: Array<{ destroy(): void }> = [];
  let open = 0;
  const started = Array.from({ length: n }, async (_, i) => {
    const res = await request(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/slow-chunks-30000', stream: true, messages: [{ role: 'user', content: `stream ${i} held open for the memory budget` }] }),
    });
    if (res.statusCode !== 200) throw new Error(`stream ${i}: ${res.statusCode} ${await res.body.text()}`);
    // Wait for the first chunk: the stream is then open end to end (client, gateway, upstream).
    await new Promise<void>((done) => res.body.once('data', () => done()));
    res.body.on('data', () => undefined);
    bodies.push(res.body);
    open++;
  });
  await Promise.all(started);
  await sleep(1000);
  const during = await settledMemory(gateway.child.pid as number);
  return {
    during,
    open,
    async release() {
      for (const body of bodies) body.destroy();
      await agent.destroy();
    },
  };
}

const fmt = (bytes: number): string => `${(bytes / MB).toFixed(0)} MB`;
try {
  const rows: string[] = [];
  for (const [name, cache] of [['cache off', false], ['cache on (semantic, embedder loaded)', true]] as const) {
    const gateway = await start(name.split(' ').join('-'), cache);
    try {
      const idle = await settledMemory(gateway.child.pid as number);
      const held = await holdStreams(gateway, streams);
      await held.release();
      const per1000 = ((held.during.rss - idle.rss) / held.open) * 1000;
      const anonPer1000 = ((held.during.anon - idle.anon) / held.open) * 1000;
      rows.push(`| ${name} | ${fmt(idle.rss)} (${fmt(idle.anon)}) | ${held.open} | ${fmt(held.during.rss)} (${fmt(held.during.anon)}) | ${fmt(per1000)} (${fmt(anonPer1000)}) |`);
    } finally {
      await gateway.stop();
    }
  }
  console.log(`\nmemory budget (RSS, anonymous part in brackets; settled readings from /proc/<pid>/status)\n`);
  console.log('| gateway | idle after start | streams held | with the streams open | per 1,000 open streams |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const row of rows) console.log(row);
} finally {
  await upstream.close();
  rmSync(work, { recursive: true, force: true });
}
