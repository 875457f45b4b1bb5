import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/secret-ref.js';
import { createGateway } from '../../src/gateway.js';
import { createLog } from '../../src/log.js';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { childEnv, repoRoot, spawnMain } from '../helpers/main-process.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A base URL exported for a vendor's own SDK must work in tollgate as it is, and so must the form with the
// version path that tollgate documented before (issue 14). A base URL that is not a URL stops the start.

const ANTHROPIC_KEY = 'sk-ant-upstream';
const GEMINI_KEY = 'gemini-test-key';

let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let openai: ScriptedUpstream;
/** A reverse proxy in front of the OpenAI-format upstream: `<prefix>/...` is forwarded as `/v1/...`. */
let proxy: { url: string; received: string[]; server: Server };
const dirs: string[] = [];

/** Forwards `/proxy/v1/*` and `/openai/v1/*` (Groq's layout) to the scripted upstream's `/v1/*`; anything else is a 404. */
async function startPrefixProxy(target: string): Promise<typeof proxy> {
  const received: string[] = [];
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    received.push(`${req.method ?? 'GET'} ${path}`);
    const match = /^\/(?:proxy|openai)(\/v1\/.*)$/.exec(path);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (!match) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no such path on the proxy"}}');
        return;
      }
      const headers: Record<string, string> = {};
      for (const name of ['content-type', 'authorization']) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      fetch(`${target}${match[1]}`, { method: req.method, headers, body: chunks.length > 0 ? Buffer.concat(chunks) : undefined })
        .then(async (answer) => {
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
          res.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch(() => res.writeHead(502).end());
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server };
}

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: ANTHROPIC_KEY });
  gemini = await startGeminiUpstream({ apiKey: GEMINI_KEY });
  openai = await startOpenAIUpstream({ apiKey: null });
  proxy = await startPrefixProxy(openai.url);
});
afterAll(async () => {
  await anthropic.close();
  await gemini.close();
  await openai.close();
  await new Promise<void>((done) => proxy.server.close(() => done()));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  anthropic.reset();
  gemini.reset();
  openai.reset();
  proxy.received.length = 0;
});

const NO_RETRY = { settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } } };

async function withGateway(env: Record<string, string>, body: (tg: RunningGateway) => Promise<void>, config = {}): Promise<void> {
  const tg = await startGateway({ ...NO_RETRY, ...config }, env);
  try {
    await body(tg);
  } finally {
    await tg.stop();
  }
}

function anthropicClient(tg: RunningGateway): Anthropic {
  return new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
}

describe('ANTHROPIC_BASE_URL as the Anthropic SDK takes it, and with /v1', () => {
  for (const suffix of ['', '/', '/v1', '/v1/']) {
    it(`ANTHROPIC_BASE_URL=<upstream>${suffix} reaches POST /v1/messages`, async () => {
      await withGateway({ ANTHROPIC_API_KEY: ANTHROPIC_KEY, ANTHROPIC_BASE_URL: `${anthropic.url}${suffix}` }, async (tg) => {
        const message = await anthropicClient(tg).messages.create({
          model: 'anthropic/claude-haiku-4-5',
          max_tokens: 64,
          messages: [{ role: 'user', content: 'hello' }],
        });
        expect(message.type).toBe('message');
        expect(anthropic.calls.map((call) => `${call.method} ${call.path}`)).toEqual(['POST /v1/messages']);
      });
    });
  }

  it('a base_url set through the API without /v1 reaches /v1/messages too', async () => {
    await withGateway({}, async (tg) => {
      const put = await jsonRequest(tg.url, 'PUT', '/api/providers/anthropic', { base_url: anthropic.url, api_key: ANTHROPIC_KEY });
      expect(put.status).toBe(200);
      await anthropicClient(tg).messages.create({ model: 'anthropic/claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
      expect(anthropic.calls.map((call) => call.path)).toEqual(['/v1/messages']);
    });
  });
});

describe('GOOGLE_GEMINI_BASE_URL as the Google Gen AI SDK takes it', () => {
  for (const suffix of ['', '/v1beta']) {
    it(`GOOGLE_GEMINI_BASE_URL=<upstream>${suffix} reaches /v1beta/models/...:generateContent`, async () => {
      await withGateway({ GEMINI_API_KEY: GEMINI_KEY, GOOGLE_GEMINI_BASE_URL: `${gemini.url}${suffix}` }, async (tg) => {
        // A client on v1beta (the SDK's default is v1, and a client's own body goes to the version it addressed).
        const ai = new GoogleGenAI({ apiKey: 'client-side-key', apiVersion: 'v1beta', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
        const response = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hello' });
        expect(response.candidates?.length).toBe(1);
        expect(gemini.calls.map((call) => call.path)).toEqual(['/v1beta/models/gemini-2.5-flash:generateContent']);
      });
    });
  }
});

describe('OpenAI-compatible base URLs', () => {
  for (const suffix of ['', '/', '/v1', '/v1/']) {
    it(`VLLM_BASE_URL=<server>${suffix} reaches POST /v1/chat/completions`, async () => {
      await withGateway({ VLLM_BASE_URL: `${openai.url}${suffix}` }, async (tg) => {
        const completion = await tg.client.chat.completions.create({ model: 'vllm/qwen', messages: [{ role: 'user', content: 'hello' }] });
        expect(completion.choices[0]?.message.content).toBe('echo: hello');
        expect(openai.calls.map((call) => `${call.method} ${call.path}`)).toEqual(['POST /v1/chat/completions']);
      });
    });
  }

  it('a reverse-proxy prefix ending in /v1 is used as written', async () => {
    await withGateway({}, async (tg) => {
      const completion = await tg.client.chat.completions.create({ model: 'lab/qwen', messages: [{ role: 'user', content: 'hello' }] });
      expect(completion.choices[0]?.message.content).toBe('echo: hello');
      expect(proxy.received).toEqual(['POST /proxy/v1/chat/completions']);
    }, { providers: { lab: { type: 'openai', base_url: `${proxy.url}/proxy/v1/`, api_key: 'k' } } });
  });

  it('GROQ_BASE_URL as the Groq SDK takes it (the host) reaches /openai/v1/chat/completions', async () => {
    await withGateway({ GROQ_API_KEY: 'gsk-test', GROQ_BASE_URL: proxy.url }, async (tg) => {
      const completion = await tg.client.chat.completions.create({ model: 'groq/llama-3.3-70b-versatile', messages: [{ role: 'user', content: 'hello' }] });
      expect(completion.choices[0]?.message.content).toBe('echo: hello');
      expect(proxy.received).toEqual(['POST /openai/v1/chat/completions']);
      expect(openai.calls[0]?.headers.authorization).toBe('Bearer gsk-test');
    });
  });
});

describe('an environment base URL that is not a URL stops the start', () => {
  it('createGateway fails with a ConfigError naming the variable', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-baseurl-'));
    dirs.push(dataDir);
    const starting = createGateway({
      config: { settings: { data_dir: dataDir } },
      configPath: null,
      env: { ANTHROPIC_BASE_URL: 'api.anthropic.com' },
      log: createLog('silent'),
    });
    await expect(starting).rejects.toBeInstanceOf(ConfigError);
    await expect(starting).rejects.toThrow(/ANTHROPIC_BASE_URL: expected an http:\/\/ or https:\/\/ URL.*"api\.anthropic\.com"/);
  });

  it('the server process exits before serving and says which variable is wrong', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'tollgate-baseurl-main-'));
    dirs.push(cwd);
    await expect(spawnMain({ cwd, env: { OPENAI_BASE_URL: 'localhost:8000/v1' } })).rejects.toThrow(
      /gateway exited early:[\s\S]*tollgate: configuration error: OPENAI_BASE_URL: expected an http:\/\/ or https:\/\/ URL/,
    );
  }, 30_000);

  it('npm start exits with status 1 and the message on stderr', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'tollgate-baseurl-npm-'));
    dirs.push(cwd);
    const child = spawn('npm', ['start', '--silent', '--prefix', repoRoot], {
      cwd,
      env: childEnv({ ANTHROPIC_BASE_URL: 'api.anthropic.com', TOLLGATE_DATA_DIR: join(cwd, 'data'), PORT: '0', HOST: '127.0.0.1' }, cwd),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    const code = await new Promise<number | null>((done) => child.on('exit', done));
    expect(code).toBe(1);
    expect(stderr).toContain('tollgate: configuration error: ANTHROPIC_BASE_URL: expected an http:// or https:// URL');
    expect(stderr).toContain('"api.anthropic.com"');
  }, 30_000);

  it('a base_url without a scheme is refused by the API with the field\'s path, and the running config stays', async () => {
    await withGateway({}, async (tg) => {
      const put = await jsonRequest(tg.url, 'PUT', '/api/providers/anthropic', { base_url: 'api.anthropic.com', api_key: ANTHROPIC_KEY });
      expect(put.status).toBe(400);
      expect(JSON.stringify(put.body)).toContain('base_url');
      const view = await jsonRequest(tg.url, 'GET', '/api/providers/anthropic');
      expect(view.body.base_url).toBe('https://api.anthropic.com/v1');
    });
  });
});
