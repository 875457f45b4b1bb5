import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ConfigInput } from '../../src/config/schema.js';
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/mcp/http-server.js';
import { startReceiver, until, type Receiver } from '../helpers/alert-receiver.js';
import { startConnectProxy, type ConnectProxy } from '../helpers/connect-proxy.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { spawnMain } from '../helpers/main-process.js';
import { OtlpReceiver } from '../helpers/otlp-receiver.js';
import { makeTestCa, type TestCa } from '../helpers/test-ca.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Deployment inside a private network: every outbound HTTP(S) call goes through the proxy of HTTPS_PROXY /
// HTTP_PROXY (or settings.network.proxy) except NO_PROXY destinations, and upstreams whose certificates a
// company CA signed are trusted through settings.network.ca_file or NODE_EXTRA_CA_CERTS. Real CONNECT proxies,
// a real HTTPS upstream with a CA made by openssl, the official OpenAI SDK as the client.

let ca: TestCa;
/** An HTTPS upstream whose certificate `ca` signed (nobody else trusts it). */
let secure: ScriptedUpstream;
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  ca = makeTestCa();
  secure = await startOpenAIUpstream({ apiKey: 'sk-upstream-test', tls: { key: ca.key, cert: ca.cert } });
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await secure?.close();
  ca?.remove();
});

async function proxy(options: { refuse?: number } = {}): Promise<ConnectProxy> {
  const started = await startConnectProxy(options);
  cleanups.push(() => started.close());
  return started;
}

async function gateway(config: ConfigInput, env: Record<string, string> = {}, configPath?: string): Promise<RunningGateway> {
  const tg = await startGateway(config, env, configPath ? { configPath } : {});
  cleanups.push(() => tg.stop());
  return tg;
}

function secureProvider(extra: ConfigInput = {}): ConfigInput {
  return { ...extra, providers: { openai: { base_url: `${secure.url}/v1`, api_key: 'sk-upstream-test' } } };
}

const upstreamHost = () => `127.0.0.1:${new URL(secure.url).port}`;

/** A non-streamed and a streamed chat completion through the gateway; returns the two answers' text. */
async function chatBothWays(client: OpenAI): Promise<string[]> {
  const json = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello through the proxy' }] });
  const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'and streamed' }], stream: true });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
  return [json.choices[0]!.message.content ?? '', streamed];
}

/** The error message the request log (the operator's side) keeps for the request that failed with `error`. */
async function loggedMessage(tg: RunningGateway, error: APIError): Promise<string> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const found = await gatewayApi(() => tg.url).api('GET', `/api/logs/${error.requestID}`);
    if (found.status === 200) return found.body.error_message as string;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`no log entry for ${error.requestID}`);
}

async function failure(client: OpenAI): Promise<APIError> {
  const error = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(APIError);
  return error as APIError;
}

describe('upstream calls through an HTTP CONNECT proxy', () => {
  it('tunnel through HTTPS_PROXY to an HTTPS upstream whose CA settings.network.ca_file names (JSON and stream)', async () => {
    const corporate = await proxy();
    const before = secure.calls.length;
    const tg = await gateway(secureProvider({ settings: { network: { ca_file: ca.caFile } } }), { HTTPS_PROXY: corporate.url });
    const answers = await chatBothWays(tg.client);
    expect(answers.every((text) => text.length > 0)).toBe(true);
    expect(secure.calls.length - before).toBe(2);
    // Every connection to the upstream was a tunnel through the proxy (keep-alive may reuse one for both calls).
    expect(corporate.tunnels.length).toBeGreaterThan(0);
    expect(new Set(corporate.tunnels)).toEqual(new Set([upstreamHost()]));
    expect(corporate.plain).toEqual([]);
  });

  it('goes direct to destinations NO_PROXY lists: the proxy sees nothing', async () => {
    const corporate = await proxy();
    const tg = await gateway(secureProvider({ settings: { network: { ca_file: ca.caFile } } }), { HTTPS_PROXY: corporate.url, NO_PROXY: 'localhost,127.0.0.1' });
    expect((await chatBothWays(tg.client)).every((text) => text.length > 0)).toBe(true);
    expect(corporate.tunnels).toEqual([]);
  });

  it('settings.network overrides the environment: its proxy wins over HTTPS_PROXY, its no_proxy over NO_PROXY', async () => {
    const corporate = await proxy();
    const elsewhere = await proxy();
    const tg = await gateway(secureProvider({ settings: { network: { proxy: corporate.url, no_proxy: ['.internal.example'], ca_file: ca.caFile } } }), {
      HTTPS_PROXY: elsewhere.url,
      NO_PROXY: '127.0.0.1',
    });
    expect((await chatBothWays(tg.client)).every((text) => text.length > 0)).toBe(true);
    expect(new Set(corporate.tunnels)).toEqual(new Set([upstreamHost()]));
    expect(elsewhere.tunnels).toEqual([]);
  });

  it('without the CA the call fails with a 502 that names the certificate problem and how to trust a CA', async () => {
    const corporate = await proxy();
    const tg = await gateway(secureProvider({ routes: {} }), { HTTPS_PROXY: corporate.url });
    const error = await failure(tg.client);
    expect(error.status).toBe(502);
    expect(error.message).toContain('TLS failed with the upstream (');
    expect(error.message).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|UNABLE_TO_GET_ISSUER/);
    expect(error.message).toContain('settings.network.ca_file or NODE_EXTRA_CA_CERTS');
    // Where the upstream is, the operator's side alone says.
    expect(error.message).not.toContain(upstreamHost());
    expect(await loggedMessage(tg, error)).toContain(`TLS failed with the upstream at ${secure.url}/v1/chat/completions`);
    // The tunnel was opened; the certificate inside it was refused.
    expect(corporate.tunnels).toContain(upstreamHost());
    // The gateway is fine afterwards.
    expect((await fetch(`${tg.url}/health`)).status).toBe(200);
  });

  it('a proxy that refuses the tunnel (407) gives a 502 saying so, and the proxy URL\'s credentials are sent', async () => {
    const refusing = await proxy({ refuse: 407 });
    const withCredentials = refusing.url.replace('http://', 'http://ops:s3cret@');
    const tg = await gateway(secureProvider({ settings: { network: { proxy: withCredentials, ca_file: ca.caFile } } }));
    const error = await failure(tg.client);
    expect(error.status).toBe(502);
    expect(error.message).toContain('The proxy refused the tunnel to the upstream (');
    expect(error.message).toContain('407');
    expect(error.message).not.toContain(upstreamHost());
    expect(await loggedMessage(tg, error)).toContain(`The proxy refused the tunnel to the upstream at ${secure.url}/v1/chat/completions`);
    expect(refusing.authorizations[0]).toBe(`Basic ${Buffer.from('ops:s3cret').toString('base64')}`);
    // The password is never shown by the API.
    const settings = (await gatewayApi(() => tg.url).api('GET', '/api/config')).body.settings;
    expect(settings.network.https_proxy).toBe(refusing.url.replace('http://', 'http://****@'));
    expect(JSON.stringify(settings)).not.toContain('s3cret');
  });
});

describe('every other outbound HTTP client takes the same proxy', () => {
  let corporate: ConnectProxy;
  let plain: ScriptedUpstream;
  let collector: OtlpReceiver;
  let hooks: Receiver;
  let mcp: HttpMcpServer;
  let tg: RunningGateway;

  beforeAll(async () => {
    corporate = await proxy();
    plain = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
    collector = new OtlpReceiver();
    await collector.start();
    hooks = await startReceiver();
    mcp = await startHttpMcpServer('mcp-token');
    cleanups.push(() => plain.close(), () => collector.close(), () => hooks.close(), () => mcp.close());
    tg = await gateway(
      {
        providers: { openai: { base_url: `${plain.url}/v1`, api_key: 'sk-upstream-test' } },
        settings: { tracing: { endpoint: `${collector.url}/v1/traces` } },
        alerts: { channels: { ops: { type: 'webhook', url: hooks.url } } },
        mcp: { servers: { tools: { type: 'http', url: mcp.url, token: 'mcp-token' } } },
      },
      // http:// destinations: HTTP_PROXY (also tunnelled with CONNECT).
      { HTTP_PROXY: corporate.url },
    );
  });

  it('providers, the OTLP collector, alert webhooks and MCP servers are all reached through the tunnel', async () => {
    const { api } = gatewayApi(() => tg.url);
    for (let tries = 0; (await api('GET', '/api/mcp')).body.servers?.[0]?.state !== 'ready'; tries++) {
      expect(tries, 'the MCP server did not connect').toBeLessThan(150);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'traced' }] });
    expect((await api('POST', '/api/alerts/channels/ops/test')).status).toBe(200);
    await until('the test notification', () => hooks.deliveries.length > 0);
    await collector.waitFor((spans) => spans.length > 0);
    const port = (url: string) => `127.0.0.1:${new URL(url).port}`;
    expect(new Set(corporate.tunnels)).toEqual(new Set([port(plain.url), port(collector.url), port(hooks.url), port(mcp.url)]));
    expect(corporate.plain).toEqual([]);
  });
});

describe('NODE_EXTRA_CA_CERTS', () => {
  it('is trusted by the upstream client from the process start, and settings.network.ca_file adds to it rather than replacing it', async () => {
    // A second company CA for a second upstream: one trusted through the environment, the other through the file.
    const otherCa = makeTestCa('tollgate other test CA');
    cleanups.push(() => otherCa.remove());
    const other = await startOpenAIUpstream({ apiKey: 'sk-other', tls: { key: otherCa.key, cert: otherCa.cert } });
    cleanups.push(() => other.close());
    const corporate = await proxy();
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-extra-ca-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const providers: ConfigInput['providers'] = {
      openai: { base_url: `${secure.url}/v1`, api_key: 'sk-upstream-test' },
      lab: { type: 'openai', base_url: `${other.url}/v1`, api_key: 'sk-other', models: ['gpt-4o-mini'] },
    };
    const path = join(dir, 'tollgate.config.yaml');
    const save = (document: ConfigInput) => {
      writeFileSync(`${path}.tmp`, stringify(document));
      renameSync(`${path}.tmp`, path);
    };
    save({ providers });
    // Node reads NODE_EXTRA_CA_CERTS once, at start: only a new process shows whether undici's TLS honours it.
    const main = await spawnMain({ cwd: dir, env: { NODE_EXTRA_CA_CERTS: ca.caFile, HTTPS_PROXY: corporate.url } });
    cleanups.push(async () => {
      main.child.kill('SIGTERM');
      await main.exit;
    });
    const client = new OpenAI({ baseURL: `${main.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 15_000 });
    const ask = (model: string) => client.chat.completions.create({ model, messages: [{ role: 'user', content: `hello ${model}` }] });
    // No ca_file: undici's default TLS context, which holds what Node loaded from NODE_EXTRA_CA_CERTS.
    expect((await ask('openai/gpt-4o-mini')).choices[0]!.message.content).not.toBe('');
    await expect(ask('lab/gpt-4o-mini')).rejects.toMatchObject({ status: 502 });

    // The file's CA (applied live) is added: both upstreams verify, the environment's CA was not dropped.
    save({ providers, settings: { network: { ca_file: otherCa.caFile } } });
    const { api } = gatewayApi(() => main.url);
    for (let tries = 0; (await api('GET', '/api/config')).body.settings?.network?.ca_file !== otherCa.caFile; tries++) {
      expect(tries, 'the config file with ca_file was not applied').toBeLessThan(100);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await ask('lab/gpt-4o-mini')).choices[0]!.message.content).not.toBe('');
    expect((await ask('openai/gpt-4o-mini')).choices[0]!.message.content).not.toBe('');
    expect(new Set(corporate.tunnels)).toEqual(new Set([upstreamHost(), `127.0.0.1:${new URL(other.url).port}`]));
  }, 40_000);
});

describe('network settings apply live and belong to the config file', () => {
  it('a config file save turns the proxy on for the next call; the API refuses settings.network', async () => {
    const corporate = await proxy();
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-network-live-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'tollgate.config.yaml');
    const save = (document: ConfigInput) => {
      writeFileSync(`${path}.tmp`, stringify(document));
      renameSync(`${path}.tmp`, path);
    };
    const direct = secureProvider({ settings: { network: { ca_file: ca.caFile } } });
    save(direct);
    const tg = await gateway(direct, {}, path);
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'direct' }] });
    expect(corporate.tunnels).toEqual([]);

    save(secureProvider({ settings: { network: { proxy: corporate.url, ca_file: ca.caFile } } }));
    await until('the file applied', () => tg.gateway.configService.current().settings.network.httpsProxy === corporate.url);
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'proxied' }] });
    expect(corporate.tunnels).toEqual([upstreamHost()]);

    const refused = await gatewayApi(() => tg.url).api('PATCH', '/api/config', { settings: { network: { proxy: 'http://attacker.example:3128' } } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('settings.network: set in the config file or the environment only');
    expect(tg.gateway.configService.current().settings.network.httpsProxy).toBe(corporate.url);
  });
});
