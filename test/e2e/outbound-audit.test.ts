import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ConfigInput } from '../../src/config/schema.js';
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/mcp/http-server.js';
import { startReceiver, until, type Receiver } from '../helpers/alert-receiver.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { spawnMain, type MainProcess } from '../helpers/main-process.js';
import { OtlpReceiver } from '../helpers/otlp-receiver.js';
import { writeTinySentenceModel } from '../helpers/tiny-onnx-model.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// No outbound call except the configured upstreams, collector, alert channels and MCP servers: no telemetry home,
// no update check, no model or price download. The gateway runs as its own process with a recorder preloaded
// (test/helpers/outbound-recorder.mjs) that logs every TCP connect, UDP send and name lookup, in the main thread
// and in the embedder and index workers, through a scenario that touches every feature that could reach out.

const RECORDER = pathToFileURL(join(import.meta.dirname, '../helpers/outbound-recorder.mjs')).href;

interface Attempt {
  kind: 'tcp' | 'udp' | 'dns' | 'thread' | 'eval-worker';
  destination: string;
  thread: number;
}

let dir: string;
let upstream: ScriptedUpstream;
let collector: OtlpReceiver;
let hooks: Receiver;
let mcp: HttpMcpServer;
let main: MainProcess | null = null;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-outbound-'));
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  collector = new OtlpReceiver();
  await collector.start();
  hooks = await startReceiver();
  mcp = await startHttpMcpServer('mcp-token');
});

afterAll(async () => {
  if (main && main.child.exitCode === null) {
    main.child.kill('SIGKILL');
    await main.exit;
  }
  await Promise.all([upstream?.close(), collector?.close(), hooks?.close(), mcp?.close()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('outbound connections', () => {
  it('a full scenario contacts exactly the configured upstream, collector, alert webhook and MCP server', async () => {
    const log = join(dir, 'outbound.jsonl');
    writeTinySentenceModel(join(dir, 'data', 'models'), 'tiny');
    const document: ConfigInput = {
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' } },
      settings: { tracing: { endpoint: `${collector.url}/v1/traces` } },
      // The built-in embedder first (use-lite: TensorFlow.js weights from the installed package).
      cache: { mode: 'on', semantic: { embedder: 'use-lite' } },
      alerts: { channels: { ops: { type: 'webhook', url: hooks.url } } },
      mcp: { servers: { tools: { type: 'http', url: mcp.url, token: 'mcp-token' } } },
    };
    writeFileSync(join(dir, 'tollgate.config.yaml'), stringify(document));
    writeFileSync(log, '');
    // No provider keys in the environment: only what the file configures may be called.
    main = await spawnMain({ cwd: dir, env: { TOLLGATE_OUTBOUND_LOG: log }, imports: [RECORDER] });
    const { api } = gatewayApi(() => main!.url);
    const client = new OpenAI({ baseURL: `${main.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20_000 });

    await eventually('the MCP server and the cache embedder', async () => {
      const [tools, cache] = await Promise.all([api('GET', '/api/mcp'), api('GET', '/api/cache')]);
      return tools.body.servers?.[0]?.state === 'ready' && cache.body.embedder?.state === 'ready';
    }, 60_000);

    // Chat, JSON and streamed, embeddings, and a cache hit.
    const ask = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'what is the capital of france' }] };
    expect((await client.chat.completions.create(ask)).choices[0]!.message.content).not.toBe('');
    let streamed = '';
    for await (const chunk of await client.chat.completions.create({ ...ask, messages: [{ role: 'user', content: 'stream it' }], stream: true })) streamed += chunk.choices[0]?.delta.content ?? '';
    expect(streamed).not.toBe('');
    const vectors = await client.embeddings.create({ model: 'openai/text-embedding-3-small', input: ['one', 'two'] });
    expect(vectors.data).toHaveLength(2);
    await eventually('the answer in the semantic index', async () => (await api('GET', '/api/cache')).body.semantic_index?.vectors >= 1);
    const { response: hit } = await client.chat.completions.create(ask).withResponse();
    expect(hit.headers.get('x-tollgate-cache')).toMatch(/^hit/);

    // An MCP tool call, an alert delivery, and spans at the collector.
    const tool = await fetch(`${main.url}/v1/mcp/tools/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'tools__lookup', arguments: { key: 'k' } }) });
    expect(tool.status).toBe(200);
    expect((await api('POST', '/api/alerts/channels/ops/test')).status).toBe(200);
    await until('the alert delivery', () => hooks.deliveries.length > 0, 10_000);
    await collector.waitFor((spans) => spans.length > 0, 10_000);

    // The dashboard (served from dashboard/dist, or a 503 page saying how to build it when it is not built), the
    // management API, metrics and health.
    expect([200, 503]).toContain((await fetch(`${main.url}/`)).status);
    for (const path of ['/health', '/metrics', '/api/config', '/api/usage', '/api/logs', '/api/alerts', '/api/cache', '/api/mcp']) {
      expect((await fetch(`${main.url}${path}`)).status, path).toBe(200);
    }

    // The ONNX embedder (@xenova/transformers, which can download from the Hugging Face hub) on a local model.
    expect((await api('PATCH', '/api/config', { cache: { semantic: { embedder: 'onnx:tiny' } } })).status).toBe(200);
    await eventually('the ONNX embedder', async () => {
      const cache = (await api('GET', '/api/cache')).body;
      return cache.embedder?.id?.startsWith('onnx:tiny') && cache.embedder.state === 'ready';
    }, 60_000);
    await client.chat.completions.create({ ...ask, messages: [{ role: 'user', content: 'the capital of germany' }] });

    main.child.kill('SIGTERM');
    expect((await main.exit).code).toBe(0);

    const attempts = readFileSync(log, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Attempt);
    const configured = [upstream.url, collector.url, hooks.url, mcp.url].map((url) => `127.0.0.1:${new URL(url).port}`);
    // tsx, the TypeScript loader `npm start` runs under, opens a Unix socket in its own temp folder to talk to a
    // parent tsx process: a local pipe, not the network. Any other Unix socket would show below.
    const tsxPipe = (attempt: Attempt) => attempt.kind === 'tcp' && /^unix:.*\/tsx-\d+\/\d+\.pipe$/.test(attempt.destination);
    const network = attempts.filter((attempt) => attempt.kind !== 'thread' && !tsxPipe(attempt));
    // Each configured destination was contacted, and nothing else was: no lookup, no UDP, no other host or port.
    expect(new Set(network.map((attempt) => `${attempt.kind} ${attempt.destination}`))).toEqual(new Set(configured.map((destination) => `tcp ${destination}`)));
    // The recorder ran in the worker threads too (the embedders'), so a download from there would have shown.
    expect(attempts.filter((attempt) => attempt.kind === 'thread' && attempt.thread !== 0).length).toBeGreaterThan(0);
  }, 180_000);
});
