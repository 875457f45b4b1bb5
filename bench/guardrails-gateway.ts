// Guardrails through the gateway: the latency a request pays for the guardrails stage with the regex/PII/secret
// rules on, beside the same gateway without rules, in one run, interleaved (rounds alternate between the two so
// machine noise falls on both). Non-streamed: a 2 KB prompt answered by the scripted upstream (which echoes it, so
// the output rules scan 2 KB too). Streamed: time to first and last byte of a 20-chunk answer. Usage:
//   npm run bench:guardrails-gateway -- [--rounds 10] [--per-round 200]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { createGateway, type Gateway } from '../src/gateway.js';
import { createLog } from '../src/log.js';
import { startOpenAIUpstream } from '../test/upstream/openai-upstream.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '10' }, 'per-round': { type: 'string', default: '200' } } });
const rounds = Number(values.rounds);
const perRound = Number(values['per-round']);

const RULES = [
  { name: 'email', kind: 'email', action: 'redact' },
  { name: 'phone', kind: 'phone', action: 'redact' },
  { name: 'card', kind: 'payment_card', action: 'redact' },
  { name: 'iban', kind: 'iban', action: 'redact' },
  { name: 'ids', kind: 'national_id', action: 'redact' },
  { name: 'secret', kind: 'secret', action: 'block' },
  { name: 'injection', kind: 'prompt_injection', action: 'flag' },
  { name: 'deny', kind: 'keyword', action: 'block', keywords: ['project zeus', 'codename falcon'] },
  { name: 'tickets', kind: 'regex', action: 'flag', patterns: ['\\bTICKET-\\d{3,6}\\b'] },
] as const;

/** About 2 KB of support-desk prose with numbers that are not PII. */
const PROMPT = (
  'Summarise the conversation for the account manager and draft a polite reply under 200 words. ' +
  'The customer says order 100234987 from 2024-03-14 was charged twice at 10:42:17 and 10:42:19, 49.90 EUR each, ' +
  'and asks whether the export endpoint has a limit per minute, since it answers 429 with retry_after_ms 1500 when ' +
  'more than 10000 rows are pulled. The integration runs every 15 minutes over 50 pages of 200 rows. '
).repeat(5);

const upstream = await startOpenAIUpstream({ apiKey: null, record: false });
const dirs: string[] = [];
async function gateway(guardrails: boolean): Promise<{ gateway: Gateway; url: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-guard-'));
  dirs.push(dataDir);
  const created = await createGateway({
    config: {
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-bench' } },
      settings: { data_dir: dataDir, metrics: { enabled: false } },
      ...(guardrails ? { guardrails: { rules: structuredClone(RULES) as never } } : {}),
    },
    env: {},
    log: createLog('silent'),
  });
  return { gateway: created, url: await created.listen({ port: 0, host: '127.0.0.1' }) };
}

const plain = await gateway(false);
const guarded = await gateway(true);
const agent = new Agent({ connections: 1 });

async function once(url: string, stream: boolean): Promise<{ total: number; first: number }> {
  const body = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: stream ? 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen' : PROMPT }], stream });
  const started = performance.now();
  const response = await request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, dispatcher: agent });
  let first = 0;
  for await (const chunk of response.body) {
    if (first === 0 && (chunk as Buffer).length > 0) first = performance.now() - started;
  }
  if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`);
  return { total: performance.now() - started, first };
}

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
}

const fmt = (ms: number): string => `${(ms * 1000).toFixed(0).padStart(5)} µs`;

for (const stream of [false, true]) {
  const times = { plain: { total: [] as number[], first: [] as number[] }, guarded: { total: [] as number[], first: [] as number[] } };
  // Warm both.
  for (let i = 0; i < 200; i++) {
    await once(plain.url, stream);
    await once(guarded.url, stream);
  }
  for (let round = 0; round < rounds; round++) {
    for (const [name, target] of round % 2 === 0 ? ([['plain', plain], ['guarded', guarded]] as const) : ([['guarded', guarded], ['plain', plain]] as const)) {
      for (let i = 0; i < perRound; i++) {
        const { total, first } = await once(target.url, stream);
        times[name].total.push(total);
        times[name].first.push(first);
      }
    }
  }
  console.log(`\n${stream ? 'streamed, 20 chunks' : 'non-streamed, 2 KB prompt (and 2 KB answer)'}: ${rounds * perRound} requests each, 1 connection`);
  console.log('                      p50        p99   ' + (stream ? '  first byte p50' : ''));
  for (const name of ['plain', 'guarded'] as const) {
    console.log(`  ${name === 'plain' ? 'no guardrails ' : '9 rules on    '}  ${fmt(pct(times[name].total, 50))}  ${fmt(pct(times[name].total, 99))}${stream ? `   ${fmt(pct(times[name].first, 50))}` : ''}`);
  }
  console.log(`  added by guardrails: p50 ${fmt(pct(times.guarded.total, 50) - pct(times.plain.total, 50))}, p99 ${fmt(pct(times.guarded.total, 99) - pct(times.plain.total, 99))}`);
}

await agent.close();
await plain.gateway.close(500);
await guarded.gateway.close(500);
await upstream.close();
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
