// Amazon Bedrock behind an IAM role: tollgate on EKS (IRSA, Pod Identity), ECS (a task role) or EC2 (an instance
// profile) signs its Bedrock calls with the role's temporary credentials, found by AWS's own default credential chain,
// with no access key configured. The credentials come from scripted loopback stand-ins of the container credentials
// endpoint and of STS; the scripted Bedrock upstream takes only signatures made with credentials they issued, with
// their session token signed, until they expire. The official OpenAI and Anthropic SDKs are the clients.
//
// The chain reads the process environment itself (as every AWS SDK does), not the gateway's `env` option: each part
// sets the variables it needs in process.env and puts back what was there.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { APIError } from 'openai';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ConfigInput } from '../../src/config/schema.js';
import { startConnectProxy } from '../helpers/connect-proxy.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { startAwsCredentialsEndpoint, type ScriptedAwsCredentials } from '../upstream/aws-credentials-endpoint.js';
import { startBedrockUpstream, type BedrockUpstream, type IssuedCredentials } from '../upstream/bedrock-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const MODEL_ID = 'anthropic.claude-3-5-sonnet-20241022-v2:0';
const CONTAINER_TOKEN = 'pod-identity-authorization-token-5d1e';
const ROLE_ARN = 'arn:aws:iam::123456789012:role/tollgate';
const dir = mkdtempSync(join(tmpdir(), 'tollgate-awsrole-'));
const logged: string[] = [];
const cleanups: Array<() => unknown> = [];

/** Every variable the chain reads, cleared for the test: no credentials of the machine running it are found. */
const CHAIN_VARIABLES = [
  'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_DEFAULT_PROFILE', 'AWS_BEARER_TOKEN_BEDROCK',
  'AWS_WEB_IDENTITY_TOKEN_FILE', 'AWS_ROLE_ARN', 'AWS_ROLE_SESSION_NAME', 'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI', 'AWS_CONTAINER_AUTHORIZATION_TOKEN', 'AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE',
  'AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_STS', 'AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_CONFIG_FILE', 'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_EC2_METADATA_DISABLED', 'AWS_SDK_LOAD_CONFIG',
];
const saved = Object.fromEntries(CHAIN_VARIABLES.map((name) => [name, process.env[name]]));

/** Sets the chain's environment to exactly `vars` (config files that do not exist, IMDS off, unless given). */
function chainEnv(vars: Record<string, string>): void {
  for (const name of CHAIN_VARIABLES) delete process.env[name];
  Object.assign(process.env, {
    AWS_CONFIG_FILE: join(dir, 'no-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(dir, 'no-credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
    ...vars,
  });
}

afterAll(async () => {
  for (const name of CHAIN_VARIABLES) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** Issued by any of the scripted credential sources: what the Bedrock upstream takes. */
const sources: Array<(id: string) => IssuedCredentials | undefined> = [];
let bedrock: BedrockUpstream;
let openai: ScriptedUpstream;

beforeAll(async () => {
  bedrock = await startBedrockUpstream({ region: 'eu-west-1', issued: (id) => sources.map((issued) => issued(id)).find(Boolean) });
  openai = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  cleanups.push(() => bedrock.close(), () => openai.close());
});

async function credentialsEndpoint(options: Parameters<typeof startAwsCredentialsEndpoint>[0] = {}): Promise<ScriptedAwsCredentials> {
  const started = await startAwsCredentialsEndpoint(options);
  sources.push(started.issued);
  cleanups.push(() => started.close());
  return started;
}

async function gateway(config: ConfigInput, env: Record<string, string> = {}): Promise<RunningGateway> {
  const log = pino({ level: 'debug' }, { write: (line: string) => void logged.push(line) });
  const tg = await startGateway({ ...config, settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } }, ...config.settings } }, env, { log });
  cleanups.push(() => tg.stop());
  return tg;
}

/** A Bedrock provider with no key at all: the default chain signs its calls. */
const roleProvider = (extra: Record<string, unknown> = {}) => ({ type: 'bedrock', base_url: bedrock.url, region: 'eu-west-1', ...extra });

const ask = (client: OpenAI, model: string, content = 'hello role') => client.chat.completions.create({ model, messages: [{ role: 'user', content }] });

/** The access key id a Bedrock call was signed with. */
function signedWith(call: { headers: Record<string, string | string[] | undefined> } | undefined): string | undefined {
  return /Credential=([^/]+)\//.exec(String(call?.headers.authorization))?.[1];
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('an ECS task role or EKS Pod Identity (the container credentials endpoint)', () => {
  let creds: ScriptedAwsCredentials;
  let tg: RunningGateway;

  beforeAll(async () => {
    creds = await credentialsEndpoint({ authorizationToken: CONTAINER_TOKEN });
    chainEnv({ AWS_CONTAINER_CREDENTIALS_FULL_URI: `${creds.url}/creds`, AWS_CONTAINER_AUTHORIZATION_TOKEN: CONTAINER_TOKEN });
    tg = await gateway({ providers: { bedrock: roleProvider() } });
  });

  it('touches no credential source before a call needs one', async () => {
    expect((await fetch(`${tg.url}/health`)).status).toBe(200);
    expect((await fetch(`${tg.url}/v1/models`)).status).toBe(200);
    expect(creds.calls).toHaveLength(0);
  });

  it("signs with the role's credentials, fetched once for concurrent first requests, the session token signed", async () => {
    bedrock.reset();
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => ask(tg.client, `bedrock/${MODEL_ID}`, `concurrent ${i}`)));
    expect(answers.map((a) => a.choices[0]?.message.content)).toEqual(Array.from({ length: 6 }, (_, i) => `echo: concurrent ${i}`));
    // A stream, and Claude's own body from an Anthropic client (InvokeModel), with the same credentials.
    const stream = await tg.client.chat.completions.create({ model: `bedrock/${MODEL_ID}`, messages: [{ role: 'user', content: 'streamed' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: streamed');
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    const message = await anthropic.messages.create({ model: `bedrock/${MODEL_ID}`, max_tokens: 100, messages: [{ role: 'user', content: 'hello claude' }] });
    expect(message.content[0]?.type).toBe('text');

    expect(creds.calls).toHaveLength(1);
    expect(creds.calls[0]).toMatchObject({ method: 'GET', path: '/creds' });
    expect(creds.calls[0]?.headers.authorization).toBe(CONTAINER_TOKEN);
    const [keyId] = creds.keyIds();
    const issued = creds.issued(keyId!)!;
    expect(bedrock.calls).toHaveLength(8);
    expect(bedrock.calls.map((call) => call.action)).toContain('invoke');
    for (const call of bedrock.calls) {
      expect(signedWith(call)).toBe(keyId);
      expect(call.headers['x-amz-security-token']).toBe(issued.sessionToken);
      expect(String(call.headers.authorization)).toMatch(/SignedHeaders=[^,]*x-amz-security-token/);
    }
  });

  it('fetches new credentials once the ones it has expire, and the call signed with them is taken', async () => {
    const tg2 = await gateway({ providers: { 'bedrock-short': roleProvider() } });
    creds.setMode({ kind: 'ok', expiresInMs: 2_000 });
    try {
      const before = creds.calls.length;
      bedrock.reset();
      await ask(tg2.client, `bedrock-short/${MODEL_ID}`, 'first');
      await new Promise((resolve) => setTimeout(resolve, 2_200));
      // Bedrock refuses the first set now (ExpiredTokenException): the answer shows the call was signed with a new one.
      expect((await ask(tg2.client, `bedrock-short/${MODEL_ID}`, 'after expiry')).choices[0]?.message.content).toBe('echo: after expiry');
      expect(creds.calls.length - before).toBe(2);
      const [first, second] = bedrock.calls.map(signedWith);
      expect(first).not.toBe(second);
      expect(creds.issued(second!)?.expiration.getTime()).toBeGreaterThan(Date.now());
    } finally {
      creds.setMode({ kind: 'ok' });
    }
  });

  it('takes auth {type: aws} set through the API, shows it back and writes it back as read', async () => {
    const { api } = gatewayApi(() => tg.url);
    const put = await api('PUT', '/api/providers/bedrock-api', { type: 'bedrock', base_url: bedrock.url, region: 'eu-west-1', auth: { type: 'aws' } });
    expect(put.status).toBe(201);
    expect(put.body.auth).toEqual({ type: 'aws' });
    const { name: _name, source: _source, keys: _keys, ...writable } = (await api('GET', '/api/providers/bedrock-api')).body;
    expect((await api('PUT', '/api/providers/bedrock-api', writable)).status).toBe(200);
    bedrock.reset();
    expect((await ask(tg.client, `bedrock-api/${MODEL_ID}`, 'via the api')).choices[0]?.message.content).toBe('echo: via the api');
    expect(signedWith(bedrock.calls[0])).toMatch(/^ASIAROLE/);
    const refused = await api('PUT', '/api/providers/bedrock-api', { type: 'bedrock', base_url: bedrock.url, api_key: 'AKID:SECRET', auth: { type: 'aws' } });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain("AWS's credential chain replaces keys");
  });

  it("gets credentials directly, not through settings.network's proxy, which the Bedrock call goes through", async () => {
    const proxy = await startConnectProxy();
    cleanups.push(() => proxy.close());
    const proxied = await gateway({ providers: { 'bedrock-proxied': roleProvider() }, settings: { network: { proxy: proxy.url } } });
    const before = creds.calls.length;
    expect((await ask(proxied.client, `bedrock-proxied/${MODEL_ID}`, 'through the proxy')).choices[0]?.message.content).toBe('echo: through the proxy');
    expect(creds.calls.length - before).toBe(1);
    expect(proxy.tunnels).toEqual([new URL(bedrock.url).host]);
  });

  it('never shows the credentials: not in /api/config, /api/providers, the request logs, the log lines', async () => {
    const secrets = [...creds.secrets(), CONTAINER_TOKEN];
    expect(secrets.length).toBeGreaterThan(2);
    const shown = await Promise.all(['/api/config', '/api/providers', '/api/logs?limit=50'].map(async (path) => (await fetch(`${tg.url}${path}`)).text()));
    for (const text of [...shown, logged.join('\n')]) {
      for (const secret of secrets) expect(text).not.toContain(secret);
    }
  });
});

describe('a credentials endpoint that fails', () => {
  let creds: ScriptedAwsCredentials;

  beforeAll(async () => {
    creds = await credentialsEndpoint({ authorizationToken: CONTAINER_TOKEN });
  });
  afterEach(() => creds.reset());

  it('answers a clear 502 naming the provider and the endpoint, and a fallback takes the request', async () => {
    const down = `http://127.0.0.1:${await closedPort()}/v1/credentials`;
    chainEnv({ AWS_CONTAINER_CREDENTIALS_FULL_URI: down, AWS_CONTAINER_AUTHORIZATION_TOKEN: CONTAINER_TOKEN });
    const tg = await gateway({
      providers: { 'bedrock-down': roleProvider(), openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream-test' } },
      routes: { chat: { targets: [{ model: `bedrock-down/${MODEL_ID}` }], fallbacks: ['openai/gpt-4o-mini'] } },
      settings: { routing: { retry: { max_attempts: 2 }, breaker: { enabled: false } } },
    });
    bedrock.reset();
    const started = Date.now();
    const error = (await ask(tg.client, `bedrock-down/${MODEL_ID}`).catch((err: unknown) => err)) as APIError;
    expect(error).toBeInstanceOf(APIError);
    expect(error.status).toBe(502);
    expect(error.message).toContain("bedrock-down: no AWS credentials: AWS's default credential chain found none");
    expect(error.message).toContain(`the container credentials endpoint ${down}`);
    expect(error.message).not.toContain(CONTAINER_TOKEN);
    expect(Date.now() - started).toBeLessThan(5_000);

    // The same through Anthropic's format: its error shape, the same words.
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    const refused = (await anthropic.messages.create({ model: `bedrock-down/${MODEL_ID}`, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err)) as InstanceType<typeof Anthropic.APIError>;
    expect(refused).toBeInstanceOf(Anthropic.APIError);
    expect(refused.status).toBe(502);
    expect((refused.error as { type?: string }).type).toBe('error');
    expect(refused.message).toContain('bedrock-down: no AWS credentials');

    const viaRoute = await tg.client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'route' }] }).withResponse();
    expect(viaRoute.data.choices[0]?.message.content).toBe('echo: route');
    expect(viaRoute.response.headers.get('x-tollgate-provider')).toBe('openai');
    expect(viaRoute.response.headers.get('x-tollgate-fallback')).toBe('true');
    expect(bedrock.calls).toHaveLength(0);

    // The endpoint back (the agent restarted): the next call after a second gets credentials and is answered.
    chainEnv({ AWS_CONTAINER_CREDENTIALS_FULL_URI: `${creds.url}/creds`, AWS_CONTAINER_AUTHORIZATION_TOKEN: CONTAINER_TOKEN });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await ask(tg.client, `bedrock-down/${MODEL_ID}`, 'back')).choices[0]?.message.content).toBe('echo: back');
  });

  it('bounds a credentials endpoint that does not answer by the provider first-byte timeout', async () => {
    chainEnv({ AWS_CONTAINER_CREDENTIALS_FULL_URI: `${creds.url}/creds`, AWS_CONTAINER_AUTHORIZATION_TOKEN: CONTAINER_TOKEN });
    creds.setMode({ kind: 'slow', delayMs: 4_000 });
    const tg = await gateway({ providers: { 'bedrock-slow': roleProvider({ timeouts: { first_byte_ms: 400 } }) } });
    const started = Date.now();
    const error = (await ask(tg.client, `bedrock-slow/${MODEL_ID}`).catch((err: unknown) => err)) as APIError;
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(error.status).toBe(502);
    expect(error.message).toMatch(/bedrock-slow: no AWS credentials: AWS's default credential chain did not answer within 400 ms \(it was looking at the container credentials endpoint/);
    // The gateway is not held meanwhile.
    expect((await fetch(`${tg.url}/health`)).status).toBe(200);
  });

  it('refuses a wrong authorization token as the endpoint does, without quoting the token', async () => {
    chainEnv({ AWS_CONTAINER_CREDENTIALS_FULL_URI: `${creds.url}/creds`, AWS_CONTAINER_AUTHORIZATION_TOKEN: 'not-the-token-0000' });
    const tg = await gateway({ providers: { 'bedrock-badtoken': roleProvider() } });
    const error = (await ask(tg.client, `bedrock-badtoken/${MODEL_ID}`).catch((err: unknown) => err)) as APIError;
    expect(error.status).toBe(502);
    expect(error.message).toContain('bedrock-badtoken: no AWS credentials');
    expect(error.message).not.toContain('not-the-token-0000');
    expect(creds.calls.at(-1)?.headers.authorization).toBe('not-the-token-0000');
  });
});

describe('role credentials AWS stops taking before they expire (sessions revoked, credentials rotated)', () => {
  let creds: ScriptedAwsCredentials;
  let tg: RunningGateway;

  beforeAll(async () => {
    creds = await credentialsEndpoint({ authorizationToken: CONTAINER_TOKEN });
    chainEnv({ AWS_CONTAINER_CREDENTIALS_FULL_URI: `${creds.url}/creds`, AWS_CONTAINER_AUTHORIZATION_TOKEN: CONTAINER_TOKEN });
    tg = await gateway({
      providers: {
        'bedrock-revoked': roleProvider(),
        'bedrock-static': roleProvider({ api_key: 'AKIDSTATICNOTKNOWN01:static-secret-9f3e' }),
        openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream-test' },
      },
      routes: { 'revoked-chat': { targets: [{ model: `bedrock-revoked/${MODEL_ID}` }], fallbacks: ['openai/gpt-4o-mini'] } },
    });
  });

  it("drops them on Bedrock's refusal and signs the call again with fresh ones, fetched once for concurrent requests", async () => {
    chainEnv({ AWS_CONTAINER_CREDENTIALS_FULL_URI: `${creds.url}/creds`, AWS_CONTAINER_AUTHORIZATION_TOKEN: CONTAINER_TOKEN });
    expect((await ask(tg.client, `bedrock-revoked/${MODEL_ID}`, 'first')).choices[0]?.message.content).toBe('echo: first');
    const first = creds.keyIds().at(-1)!;
    const fetched = creds.calls.length;
    bedrock.reset();
    creds.revoke(first);
    const answers = await Promise.all(
      Array.from({ length: 4 }, (_, i) => tg.client.chat.completions.create({ model: 'revoked-chat', messages: [{ role: 'user', content: `after revocation ${i}` }] }).withResponse()),
    );
    expect(answers.map((a) => a.data.choices[0]?.message.content)).toEqual(Array.from({ length: 4 }, (_, i) => `echo: after revocation ${i}`));
    // Bedrock answered each, with the role's new credentials: no fallback took a request.
    for (const { response } of answers) {
      expect(response.headers.get('x-tollgate-provider')).toBe('bedrock-revoked');
      expect(response.headers.get('x-tollgate-fallback')).toBe('false');
    }
    expect(creds.calls.length - fetched).toBe(1);
    const second = creds.keyIds().at(-1)!;
    expect(second).not.toBe(first);
    // Each request refused with the revoked set (those that came after the new one arrived were not) was signed again once.
    const signed = bedrock.calls.map(signedWith);
    expect(signed.filter((id) => id === second)).toHaveLength(4);
    expect(signed.filter((id) => id === first).length).toBeGreaterThanOrEqual(1);
    expect(signed.every((id) => id === first || id === second)).toBe(true);

    // Bedrock taking them as expired ahead of the expiry they came with (ExpiredTokenException): the same.
    bedrock.reset();
    creds.expireNow(second);
    expect((await ask(tg.client, `bedrock-revoked/${MODEL_ID}`, 'after early expiry')).choices[0]?.message.content).toBe('echo: after early expiry');
    expect(creds.calls.length - fetched).toBe(2);
    expect(bedrock.calls.map(signedWith)).toEqual([second, creds.keyIds().at(-1)]);

    // A stream, and an Anthropic client's own body (InvokeModel), refused the same way: answered whole.
    creds.revoke(creds.keyIds().at(-1)!);
    const stream = await tg.client.chat.completions.create({ model: `bedrock-revoked/${MODEL_ID}`, messages: [{ role: 'user', content: 'streamed after revocation' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: streamed after revocation');
    creds.revoke(creds.keyIds().at(-1)!);
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    const message = await anthropic.messages.create({ model: `bedrock-revoked/${MODEL_ID}`, max_tokens: 100, messages: [{ role: 'user', content: 'claude after revocation' }] });
    expect(message.content[0]?.type).toBe('text');
    expect(creds.calls.length - fetched).toBe(4);
  });

  it('fails a request whose fresh credentials are refused too after one new fetch, naming the provider and no secret', async () => {
    chainEnv({ AWS_CONTAINER_CREDENTIALS_FULL_URI: `${creds.url}/creds`, AWS_CONTAINER_AUTHORIZATION_TOKEN: CONTAINER_TOKEN });
    await ask(tg.client, `bedrock-revoked/${MODEL_ID}`, 'warm');
    const fetched = creds.calls.length;
    bedrock.reset();
    const refusal = { kind: 'error', status: 403, errorType: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' } as const;
    bedrock.enqueue(refusal, refusal);
    const error = (await ask(tg.client, `bedrock-revoked/${MODEL_ID}`).catch((err: unknown) => err)) as APIError;
    expect(error).toBeInstanceOf(APIError);
    expect(error.status).toBe(401);
    expect(error.message).toContain('bedrock-revoked');
    expect(error.message).toContain('The security token included in the request is invalid.');
    expect(bedrock.calls).toHaveLength(2);
    expect(creds.calls.length - fetched).toBe(1);
    const logs = await (await fetch(`${tg.url}/api/logs?limit=50`)).text();
    for (const text of [error.message, logs, logged.join('\n')]) {
      for (const secret of [...creds.secrets(), CONTAINER_TOKEN]) expect(text).not.toContain(secret);
    }
  });

  it('does not refresh a static access key pair: its refusal is the answer, after one call', async () => {
    const fetched = creds.calls.length;
    bedrock.reset();
    const error = (await ask(tg.client, `bedrock-static/${MODEL_ID}`).catch((err: unknown) => err)) as APIError;
    expect(error).toBeInstanceOf(APIError);
    expect(error.status).toBe(401);
    expect(error.message).not.toContain('static-secret-9f3e');
    expect(bedrock.calls).toHaveLength(1);
    expect(creds.calls.length).toBe(fetched);

    // Nor a long-term key pair the chain found (the environment's): only temporary credentials are fetched anew.
    chainEnv({ AWS_ACCESS_KEY_ID: 'AKIDENVSTATICUNKNOWN', AWS_SECRET_ACCESS_KEY: 'env-static-secret-31c8' });
    const envKeys = await gateway({ providers: { 'bedrock-env-static': roleProvider() } });
    bedrock.reset();
    const refused = (await ask(envKeys.client, `bedrock-env-static/${MODEL_ID}`).catch((err: unknown) => err)) as APIError;
    expect(refused.status).toBe(401);
    expect(refused.message).not.toContain('env-static-secret-31c8');
    expect(bedrock.calls.map(signedWith)).toEqual(['AKIDENVSTATICUNKNOWN']);
  });
});

describe('EKS IAM roles for service accounts (web identity through STS)', () => {
  it('exchanges the projected token with STS (AWS_ENDPOINT_URL_STS) and signs with the role it gets', async () => {
    const tokenFile = join(dir, 'eks-token');
    let current = 'eyJhbGciOiJSUzI1NiJ9.projected-1.sig';
    writeFileSync(tokenFile, current);
    const sts = await credentialsEndpoint({ roleArn: ROLE_ARN, webIdentityToken: () => current });
    // As the EKS pod identity webhook sets them.
    chainEnv({ AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile, AWS_ROLE_ARN: ROLE_ARN, AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL_STS: sts.url });
    const tg = await gateway({ providers: { 'bedrock-irsa': roleProvider() } });
    bedrock.reset();
    expect((await ask(tg.client, `bedrock-irsa/${MODEL_ID}`, 'irsa')).choices[0]?.message.content).toBe('echo: irsa');
    expect(sts.calls).toHaveLength(1);
    expect(sts.calls[0]).toMatchObject({ method: 'POST', path: '/' });
    expect(sts.calls[0]?.form).toMatchObject({ Action: 'AssumeRoleWithWebIdentity', Version: '2011-06-15', RoleArn: ROLE_ARN, WebIdentityToken: current });
    expect(signedWith(bedrock.calls[0])).toBe(sts.keyIds()[0]);
    expect(bedrock.calls[0]?.headers['x-amz-security-token']).toBe(sts.issued(sts.keyIds()[0]!)?.sessionToken);
    for (const text of [await (await fetch(`${tg.url}/api/logs?limit=10`)).text(), logged.join('\n')]) {
      expect(text).not.toContain(current);
      for (const secret of sts.secrets()) expect(text).not.toContain(secret);
    }
    current = 'rotated';
  });
});

describe("behind a company's egress proxy and CA (settings.network)", () => {
  // The only way out is the proxy, which resolves AWS's host names to the scripted stand-ins; their certificates
  // are signed by the company CA, which only settings.network.ca_file trusts.
  const STS_HOST = 'sts.eu-west-1.amazonaws.com';

  it("exchanges the web identity token with STS's own host through the proxy, trusting ca_file, as the Bedrock call", async () => {
    const ca = makeTestCa('tollgate company CA', [STS_HOST]);
    cleanups.push(() => ca.remove());
    const token = 'eyJhbGciOiJSUzI1NiJ9.projected-egress.sig';
    const tokenFile = join(dir, 'eks-token-egress');
    writeFileSync(tokenFile, token);
    const sts = await credentialsEndpoint({ roleArn: ROLE_ARN, webIdentityToken: () => token, tls: { key: ca.key, cert: ca.cert } });
    const proxy = await startConnectProxy({ resolve: { [`${STS_HOST}:443`]: new URL(sts.url).host } });
    cleanups.push(() => proxy.close());
    // As the EKS pod identity webhook sets them, with no STS endpoint override: AWS's regional STS host.
    chainEnv({ AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile, AWS_ROLE_ARN: ROLE_ARN, AWS_REGION: 'eu-west-1' });
    const tg = await gateway({ providers: { 'bedrock-egress': roleProvider() }, settings: { network: { proxy: proxy.url, ca_file: ca.caFile } } });
    bedrock.reset();
    expect((await ask(tg.client, `bedrock-egress/${MODEL_ID}`, 'egress')).choices[0]?.message.content).toBe('echo: egress');
    expect(proxy.tunnels).toEqual([`${STS_HOST}:443`, new URL(bedrock.url).host]);
    expect(sts.calls).toHaveLength(1);
    expect(sts.calls[0]?.headers.host).toBe(STS_HOST);
    expect(sts.calls[0]?.form).toMatchObject({ Action: 'AssumeRoleWithWebIdentity', RoleArn: ROLE_ARN, WebIdentityToken: token });
    expect(signedWith(bedrock.calls[0])).toBe(sts.keyIds()[0]);
    expect(bedrock.calls[0]?.headers['x-amz-security-token']).toBe(sts.issued(sts.keyIds()[0]!)?.sessionToken);
  });

  it("assumes a profile's role through the proxy, and through the new one once settings.network changes", async () => {
    const ca = makeTestCa('tollgate company CA', [STS_HOST]);
    cleanups.push(() => ca.remove());
    const SOURCE_KEY = 'AKIDSOURCEPROFILE001';
    const sts = await credentialsEndpoint({ roleArn: ROLE_ARN, sourceKeyId: SOURCE_KEY, tls: { key: ca.key, cert: ca.cert } });
    const route = { resolve: { [`${STS_HOST}:443`]: new URL(sts.url).host } };
    const first = await startConnectProxy(route);
    const second = await startConnectProxy(route);
    cleanups.push(() => first.close(), () => second.close());
    const config = join(dir, 'aws-config-assume');
    const credentials = join(dir, 'aws-credentials-assume');
    writeFileSync(config, `[profile assumed]\nrole_arn = ${ROLE_ARN}\nsource_profile = base\nregion = eu-west-1\n`);
    writeFileSync(credentials, `[base]\naws_access_key_id = ${SOURCE_KEY}\naws_secret_access_key = source-secret-6a2f\n`);
    chainEnv({ AWS_CONFIG_FILE: config, AWS_SHARED_CREDENTIALS_FILE: credentials });
    // settings.network belongs to the config file (the API refuses it): the gateway watches this one.
    const path = join(dir, 'tollgate-assume.config.yaml');
    const document = (proxy: string): ConfigInput => ({
      providers: { 'bedrock-assumed': roleProvider({ auth: { type: 'aws', profile: 'assumed' } }) },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } }, network: { proxy, ca_file: ca.caFile } },
    });
    const save = (config: ConfigInput): void => {
      writeFileSync(`${path}.tmp`, stringify(config));
      renameSync(`${path}.tmp`, path);
    };
    save(document(first.url));
    const tg = await startGateway(document(first.url), {}, { configPath: path });
    cleanups.push(() => tg.stop());
    bedrock.reset();
    expect((await ask(tg.client, `bedrock-assumed/${MODEL_ID}`, 'assumed')).choices[0]?.message.content).toBe('echo: assumed');
    expect(first.tunnels).toEqual([`${STS_HOST}:443`, new URL(bedrock.url).host]);
    expect(sts.calls.map((call) => call.form.Action)).toEqual(['AssumeRole']);
    expect(signedWith(bedrock.calls[0])).toBe(sts.keyIds()[0]);

    // The proxy changes while the gateway runs; AWS then stops taking the role's set: the new one is fetched via the new proxy.
    save(document(second.url));
    for (let tries = 0; tg.gateway.configService.current().settings.network.httpsProxy !== second.url; tries++) {
      expect(tries, 'the config file with the new proxy was not applied').toBeLessThan(100);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    sts.revoke(sts.keyIds()[0]!);
    expect((await ask(tg.client, `bedrock-assumed/${MODEL_ID}`, 'after the change')).choices[0]?.message.content).toBe('echo: after the change');
    expect(sts.calls).toHaveLength(2);
    expect(second.tunnels).toContain(`${STS_HOST}:443`);
    expect(first.tunnels.filter((host) => host.startsWith('sts.'))).toHaveLength(1);
  });

  it("gets an IAM Identity Center (SSO) profile's role credentials from its portal through the proxy, trusting ca_file", async () => {
    const PORTAL_HOST = 'portal.sso.eu-west-1.amazonaws.com';
    const ca = makeTestCa('tollgate company CA', [PORTAL_HOST]);
    cleanups.push(() => ca.remove());
    const startUrl = 'https://tollgate-test.awsapps.com/start';
    const accessToken = 'sso-access-token-after-aws-sso-login-8e41';
    const sso = await credentialsEndpoint({ ssoAccessToken: accessToken, ssoRole: { accountId: '123456789012', roleName: 'BedrockUser' }, tls: { key: ca.key, cert: ca.cert } });
    const proxy = await startConnectProxy({ resolve: { [`${PORTAL_HOST}:443`]: new URL(sso.url).host } });
    cleanups.push(() => proxy.close());
    // What `aws configure sso` writes (legacy form) and `aws sso login` caches under ~/.aws/sso/cache.
    const home = join(dir, 'sso-home');
    mkdirSync(join(home, '.aws', 'sso', 'cache'), { recursive: true });
    const cached = join(home, '.aws', 'sso', 'cache', `${createHash('sha1').update(startUrl).digest('hex')}.json`);
    writeFileSync(cached, JSON.stringify({ startUrl, region: 'eu-west-1', accessToken, expiresAt: new Date(Date.now() + 3_600_000).toISOString() }));
    const config = join(dir, 'aws-config-sso');
    writeFileSync(config, `[profile sso-user]\nsso_start_url = ${startUrl}\nsso_region = eu-west-1\nsso_account_id = 123456789012\nsso_role_name = BedrockUser\nregion = eu-west-1\n`);
    chainEnv({ AWS_CONFIG_FILE: config });
    const savedHome = process.env.HOME;
    process.env.HOME = home;
    try {
      const tg = await gateway({
        providers: { 'bedrock-sso': roleProvider({ auth: { type: 'aws', profile: 'sso-user' } }) },
        settings: { network: { proxy: proxy.url, ca_file: ca.caFile } },
      });
      bedrock.reset();
      expect((await ask(tg.client, `bedrock-sso/${MODEL_ID}`, 'sso')).choices[0]?.message.content).toBe('echo: sso');
    } finally {
      process.env.HOME = savedHome;
    }
    expect(proxy.tunnels).toEqual([`${PORTAL_HOST}:443`, new URL(bedrock.url).host]);
    expect(sso.calls).toHaveLength(1);
    expect(sso.calls[0]).toMatchObject({ method: 'GET', path: '/federation/credentials' });
    expect(signedWith(bedrock.calls[0])).toBe(sso.keyIds()[0]);
  });
});

describe('a profile named in the config (auth: {type: aws, profile})', () => {
  const PROCESS_KEY = { accessKeyId: 'ASIAPROCESS000000001', secretAccessKey: 'process-secret-7c1d', sessionToken: 'process-session-token-2b9e' };

  it("signs with the profile's credential_process credentials, over a client's own key, and shows the profile, not a secret", async () => {
    const expiration = new Date(Date.now() + 3_600_000);
    sources.push((id) => (id === PROCESS_KEY.accessKeyId ? { ...PROCESS_KEY, expiration } : undefined));
    const script = join(dir, 'print-creds.mjs');
    const out = { Version: 1, AccessKeyId: PROCESS_KEY.accessKeyId, SecretAccessKey: PROCESS_KEY.secretAccessKey, SessionToken: PROCESS_KEY.sessionToken, Expiration: expiration.toISOString() };
    writeFileSync(script, `process.stdout.write(${JSON.stringify(JSON.stringify(out))});\n`);
    const failing = join(dir, 'fail-creds.mjs');
    writeFileSync(failing, "process.stderr.write('sso login needed, password=hunter2-do-not-show'); process.exit(1);\n");
    const config = join(dir, 'aws-config');
    writeFileSync(config, `[profile tollgate]\ncredential_process = ${process.execPath} ${script}\n\n[profile broken]\ncredential_process = ${process.execPath} ${failing}\n`);
    // The environment's keys are not the profile's: a named profile is used instead of them.
    chainEnv({ AWS_CONFIG_FILE: config, AWS_ACCESS_KEY_ID: 'AKIDENVNOTUSED', AWS_SECRET_ACCESS_KEY: 'env-secret-not-used' });
    const tg = await gateway({
      providers: {
        'bedrock-profile': roleProvider({ auth: { type: 'aws', profile: 'tollgate' } }),
        'bedrock-broken': roleProvider({ auth: { type: 'aws', profile: 'broken' } }),
      },
    });
    bedrock.reset();
    const byo = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { 'x-tollgate-provider-key': 'AKIDCLIENT:client-secret' } });
    expect((await ask(byo, `bedrock-profile/${MODEL_ID}`, 'profile')).choices[0]?.message.content).toBe('echo: profile');
    expect(signedWith(bedrock.calls[0])).toBe(PROCESS_KEY.accessKeyId);
    expect(bedrock.calls[0]?.headers['x-amz-security-token']).toBe(PROCESS_KEY.sessionToken);

    const view = (await (await fetch(`${tg.url}/api/providers/bedrock-profile`)).json()) as { auth?: unknown };
    expect(view.auth).toEqual({ type: 'aws', profile: 'tollgate' });

    const error = (await ask(tg.client, `bedrock-broken/${MODEL_ID}`).catch((err: unknown) => err)) as APIError;
    expect(error.status).toBe(502);
    expect(error.message).toContain("bedrock-broken: no AWS credentials: AWS's default credential chain found none (it looked last at profile 'broken' of the AWS config files");
    for (const text of [error.message, await (await fetch(`${tg.url}/api/logs?limit=10`)).text(), logged.join('\n')]) {
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain(PROCESS_KEY.secretAccessKey);
      expect(text).not.toContain(PROCESS_KEY.sessionToken);
    }
  });
});
