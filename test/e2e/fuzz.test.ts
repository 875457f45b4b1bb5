import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { ADMIN_KEY, generateRequest, VIRTUAL_KEY, type Family, type FuzzRequest } from '../helpers/fuzz-requests.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// The proof of issue 13: thousands of generated bad requests over every route, from a seeded PRNG. None may crash
// the process, get a 5xx (the scripted upstreams stay healthy), go unanswered past its deadline, answer an error
// outside its route's own error shape, or get a header injected; and a normal request is served afterwards.
//
// Reproduce a run:      FUZZ_SEED=<seed> npx vitest run test/e2e/fuzz.test.ts
// Reproduce a request:  FUZZ_SEED=<seed> FUZZ_ONLY=<index> npx vitest run test/e2e/fuzz.test.ts
// More or fewer:        FUZZ_COUNT=<n>

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
const COUNT = Number(process.env.FUZZ_COUNT ?? 3000);
/** `FUZZ_ONLY=12,40-60`: only those request indexes. */
const ONLY = process.env.FUZZ_ONLY === undefined ? null : process.env.FUZZ_ONLY.split(',').flatMap(range);

function range(spec: string): number[] {
  const [from, to] = spec.split('-').map(Number) as [number, number | undefined];
  return to === undefined ? [from] : Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
const CONCURRENCY = 8;
/** Per request: an answer (headers and whole body) must have arrived by then. */
const DEADLINE_MS = 10_000;
/** No new request starts after this, so the test stays bounded on a slow machine (the run says how many it sent). */
const DISPATCH_BUDGET_MS = 45_000;
const MAX_REPORTED = 20;
/** Larger error answers are reported: they quote an input whole. */
const MAX_ERROR_BYTES = 8_192;
const ADMIN = 'fuzz-admin-key-0123456789';

let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;
let pool: Pool;
let virtualKey = '';
/**
 * A built dashboard of the test's own: the repository's dashboard/dist may be missing (then `/` answers its
 * documented 503) or rebuilt by a browser test while this one runs, and `/` is among the paths fuzzed.
 */
let dashboardDir = '';
const uncaught: unknown[] = [];
const onUncaught = (err: unknown): void => {
  uncaught.push(err);
};

beforeAll(async () => {
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUncaught);
  openai = await startOpenAIUpstream({ apiKey: 'sk-fuzz-openai', record: false });
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-fuzz' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-fuzz-key' });
  dashboardDir = mkdtempSync(join(tmpdir(), 'tollgate-fuzz-dashboard-'));
  mkdirSync(join(dashboardDir, 'assets'));
  writeFileSync(join(dashboardDir, 'index.html'), '<!doctype html><title>tollgate</title><script type="module" src="/assets/app-0123abcd.js"></script>\n');
  writeFileSync(join(dashboardDir, 'assets', 'app-0123abcd.js'), 'console.log("dashboard");\n');
  tg = await startGateway(
    {
      providers: {
        openai: { base_url: `${openai.url}/v1`, api_key: 'sk-fuzz-openai' },
        anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-fuzz' },
        gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-fuzz-key' },
      },
      routes: { 'fuzz-route': { targets: [{ model: 'openai/gpt-4o-mini', weight: 1 }], fallbacks: ['anthropic/claude-3-5-haiku-latest'] } },
    },
    { TOLLGATE_ADMIN_KEY: ADMIN },
    { dashboardDir },
  );
  pool = new Pool(tg.url, { connections: CONCURRENCY, pipelining: 1 });
  const created = await fetch(`${tg.url}/api/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'fuzz', budget: 1_000_000, budget_period: 'total' }),
  });
  expect(created.status).toBe(201);
  virtualKey = ((await created.json()) as { key: string }).key;
});

afterAll(async () => {
  await pool?.close();
  await tg?.stop();
  await openai?.close();
  await anthropic?.close();
  await gemini?.close();
  if (dashboardDir) rmSync(dashboardDir, { recursive: true, force: true });
  process.off('uncaughtException', onUncaught);
  process.off('unhandledRejection', onUncaught);
});

interface Outcome {
  status: number | null;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** Why there is no (whole) answer: deadline, connection closed, or the client refused to send. */
  error: string | null;
}

function substitute(text: string): string {
  return text.replaceAll(VIRTUAL_KEY, virtualKey).replaceAll(ADMIN_KEY, ADMIN);
}

async function send(req: FuzzRequest): Promise<Outcome> {
  return req.raw ? sendRaw(req.raw) : sendHttp(req);
}

async function sendHttp(req: FuzzRequest): Promise<Outcome> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`no answer within ${DEADLINE_MS} ms`)), DEADLINE_MS);
  try {
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, substitute(v)]));
    const response = await pool.request({
      method: req.method as 'GET',
      path: substitute(req.path),
      headers,
      ...(req.body !== undefined ? { body: req.body } : {}),
      signal: abort.signal,
    });
    const body = await response.body.text();
    return { status: response.statusCode, headers: response.headers, body, error: null };
  } catch (err) {
    if (abort.signal.aborted) return { status: null, headers: {}, body: '', error: `no answer within ${DEADLINE_MS} ms` };
    const e = err as Error & { code?: string };
    return { status: null, headers: {}, body: '', error: `${e.code ?? e.name}: ${e.message}` };
  } finally {
    clearTimeout(timer);
  }
}

/** Writes exact bytes and reads the first HTTP response off the socket. */
function sendRaw(bytes: Buffer): Promise<Outcome> {
  const { hostname, port } = new URL(tg.url);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: hostname, port: Number(port) });
    let done = false;
    const finish = (error: string | null): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const parsed = parseResponse(Buffer.concat(chunks));
      resolve(parsed ? { ...parsed, error: null } : { status: null, headers: {}, body: '', error: error ?? 'connection closed without an answer' });
    };
    const timer = setTimeout(() => finish(`no answer within ${DEADLINE_MS} ms`), DEADLINE_MS);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (parseResponse(Buffer.concat(chunks), true)) finish(null);
    });
    socket.on('error', () => finish(null));
    socket.on('close', () => finish(null));
    socket.write(bytes);
  });
}

/** The first response in `data`, or null when it is not (yet) whole; `complete` asks for a whole body. */
function parseResponse(data: Buffer, complete = false): Omit<Outcome, 'error'> | null {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return null;
  const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
  if (!status) return null;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let rest = data.subarray(end + 4);
  if (headers['transfer-encoding']?.includes('chunked')) {
    const out: Buffer[] = [];
    for (;;) {
      const lineEnd = rest.indexOf('\r\n');
      if (lineEnd === -1) {
        if (complete) return null;
        break;
      }
      const size = parseInt(rest.subarray(0, lineEnd).toString(), 16);
      if (!(size > 0)) break;
      if (rest.length < lineEnd + 2 + size) {
        if (complete) return null;
        break;
      }
      out.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      rest = rest.subarray(lineEnd + 4 + size);
    }
    return { status: Number(status[1]), headers, body: Buffer.concat(out).toString() };
  }
  const length = headers['content-length'] === undefined ? null : Number(headers['content-length']);
  if (length !== null) {
    if (complete && rest.length < length) return null;
    rest = rest.subarray(0, length);
  } else if (complete) {
    return null; // read until close
  }
  return { status: Number(status[1]), headers, body: rest.toString() };
}

function isRecord(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why an error body is not in the family's shape, or null when it is. */
function shapeProblem(family: Family, status: number, body: string): string | null {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return `error body is not JSON (${body.length} bytes)`;
  }
  if (family === 'openai') {
    const e = isRecord(json) ? json.error : undefined;
    if (isRecord(e) && typeof e.message === 'string' && typeof e.type === 'string' && 'param' in e && 'code' in e) return null;
    return 'error body not in the OpenAI shape {"error":{"message","type","param","code"}}';
  }
  if (family === 'anthropic') {
    if (isRecord(json) && json.type === 'error' && isRecord(json.error) && typeof json.error.type === 'string' && typeof json.error.message === 'string') return null;
    return 'error body not in the Anthropic shape {"type":"error","error":{"type","message"}}';
  }
  const e = isRecord(json) ? json.error : undefined;
  if (isRecord(e) && typeof e.code === 'number' && typeof e.message === 'string' && typeof e.status === 'string') {
    return e.code === status ? null : `Gemini error code ${e.code} differs from the HTTP status`;
  }
  return 'error body not in the Gemini shape {"error":{"code","message","status"}}';
}

/** What is wrong with an outcome, or null. */
function problemOf(req: FuzzRequest, outcome: Outcome): string | null {
  if (outcome.status === null) return outcome.error ?? 'no answer';
  for (const name of Object.keys(outcome.headers)) if (name.toLowerCase() === 'x-injected') return 'an x-injected response header';
  if (outcome.status >= 500) return `${outcome.status} for a client's request`;
  if (outcome.status >= 400 && req.method !== 'HEAD') {
    // Error messages quote inputs truncated: a 100 KB model name must not come back whole.
    if (outcome.body.length > MAX_ERROR_BYTES) return `an error answer of ${outcome.body.length} bytes (input echoed whole?)`;
    return shapeProblem(req.family, outcome.status, outcome.body);
  }
  return null;
}

function clip(value: string, max = 300): string {
  return value.length > max ? `${value.slice(0, max)}… (${value.length} chars)` : value;
}

function describeRequest(req: FuzzRequest): string {
  if (req.raw) return `raw bytes: ${clip(JSON.stringify(req.raw.toString('latin1')), 500)}`;
  const body = req.body === undefined ? '(none)' : clip(JSON.stringify(Buffer.isBuffer(req.body) ? req.body.toString('latin1') : req.body), 400);
  return `${req.method} ${clip(JSON.stringify(req.path), 300)}\n      headers: ${clip(JSON.stringify(req.headers), 300)}\n      body: ${body}`;
}

interface Failure {
  req: FuzzRequest;
  outcome: Outcome;
  problem: string;
  count: number;
}

/** Groups failures by what went wrong and where, so one bug is one line however often the fuzzer hit it. */
function groupKey(req: FuzzRequest, outcome: Outcome, problem: string): string {
  return `${problem.replace(/\d+ chars|\(\d+ bytes\)|of \d+ bytes/g, '')} | ${req.kind} | ${outcome.status ?? '-'}`;
}

function report(failures: Map<string, Failure>, sent: number): string {
  const groups = [...failures.values()].sort((a, b) => a.req.index - b.req.index);
  const lines = [`${groups.length} distinct failure(s) in ${sent} requests, seed ${SEED}:`];
  for (const f of groups.slice(0, MAX_REPORTED)) {
    lines.push(
      `- [#${f.req.index}, ${f.count}x] ${f.problem} (${f.req.kind}; status ${f.outcome.status ?? 'none'})`,
      `      ${describeRequest(f.req)}`,
      `      answer: ${clip(JSON.stringify(f.outcome.body), 300)}`,
      `      reproduce: FUZZ_SEED=${SEED} FUZZ_ONLY=${f.req.index} npx vitest run test/e2e/fuzz.test.ts`,
    );
  }
  if (groups.length > MAX_REPORTED) lines.push(`... and ${groups.length - MAX_REPORTED} more`);
  return lines.join('\n');
}

describe('fuzz: generated bad requests over every route', () => {
  it(`crash nothing, get no 5xx, never hang, answer in the route's error shape (seed ${SEED})`, { timeout: 120_000 }, async () => {
    console.log(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} reproduces this run)`);
    const indexes = ONLY ?? Array.from({ length: COUNT }, (_, i) => i);
    const failures = new Map<string, Failure>();
    const statuses = new Map<number | string, number>();
    const started = Date.now();
    let next = 0;
    let sent = 0;

    // A /health probe beside the fuzz: the event loop must keep answering it.
    let slowestHealthMs = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const t0 = Date.now();
        const answer = await fetch(`${tg.url}/health`, { signal: AbortSignal.timeout(DEADLINE_MS) }).catch(() => null);
        await answer?.text();
        slowestHealthMs = Math.max(slowestHealthMs, answer?.ok ? Date.now() - t0 : DEADLINE_MS);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();

    const worker = async (): Promise<void> => {
      while (next < indexes.length && Date.now() - started < DISPATCH_BUDGET_MS) {
        const req = generateRequest(SEED, indexes[next++]!);
        const outcome = await send(req);
        sent++;
        statuses.set(outcome.status ?? 'none', (statuses.get(outcome.status ?? 'none') ?? 0) + 1);
        const problem = problemOf(req, outcome);
        if (problem === null) continue;
        const key = groupKey(req, outcome, problem);
        const seen = failures.get(key);
        if (seen) seen.count++;
        else failures.set(key, { req, outcome, problem, count: 1 });
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    probing = false;
    await probe;

    const elapsed = Date.now() - started;
    console.log(
      `fuzz: ${sent}/${indexes.length} requests in ${elapsed} ms, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}, slowest /health ${slowestHealthMs} ms`,
    );
    if (failures.size > 0) console.log(report(failures, sent));

    expect(uncaught.map(String), `uncaught errors in the gateway's process (seed ${SEED})`).toEqual([]);
    expect(failures.size === 0 ? '' : report(failures, sent)).toBe('');
    expect(slowestHealthMs, `/health took ${slowestHealthMs} ms during the fuzz (seed ${SEED})`).toBeLessThan(5_000);
    // Most of the run must have happened: a bounded run that sent almost nothing proves nothing.
    if (ONLY === null) expect(sent).toBeGreaterThanOrEqual(Math.min(COUNT, 1_000));
  });

  it('still serves a normal request afterwards (official OpenAI client, and with the virtual key)', async () => {
    const health = await fetch(`${tg.url}/health`, { signal: AbortSignal.timeout(2_000) });
    expect(health.status).toBe(200);
    const completion = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hello after the fuzz' }] });
    expect(completion.choices[0]?.message.content).toEqual(expect.any(String));
    const keyed = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${virtualKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
    });
    expect(keyed.status).toBe(200);
    // Every budget hold the fuzz made (keyed requests reserve before the call) was released, however it ended.
    for (let i = 0; i < 100 && Object.keys(tg.gateway.reservations.snapshot()).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(tg.gateway.reservations.snapshot()).toEqual({});
    expect(uncaught.map(String)).toEqual([]);
  });
});
