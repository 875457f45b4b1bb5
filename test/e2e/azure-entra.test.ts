import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load-file.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { startConnectProxy, type ConnectProxy } from '../helpers/connect-proxy.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';
import { startEntraEndpoint, type ScriptedEntra } from '../upstream/entra-token-endpoint.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Azure OpenAI resources whose tenant disabled key auth (disableLocalAuth) take only Microsoft Entra ID tokens. The
// gateway gets them itself, from a scripted Entra token endpoint (client secret, workload identity, App Service
// managed identity), and a scripted Azure resource takes only tokens that endpoint issued. The official OpenAI SDK
// is the client.

const SECRET = 'entra-client-secret-value-xyz';
const cleanups: Array<() => unknown> = [];
const logged: string[] = [];
/** The resource's role assignment is gone: it refuses every token, fresh ones too. */
let refusingEveryToken = false;
const dir = mkdtempSync(join(tmpdir(), 'tollgate-entra-'));

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

async function entraEndpoint(options: Parameters<typeof startEntraEndpoint>[0] = {}): Promise<ScriptedEntra> {
  const started = await startEntraEndpoint(options);
  cleanups.push(() => started.close());
  return started;
}

/** An Azure OpenAI resource with key auth disabled, taking the tokens `entra` issued. */
async function azureResource(entra: ScriptedEntra): Promise<AzureUpstream> {
  const started = await startAzureUpstream({ acceptsBearer: (token) => !refusingEveryToken && entra.accepts(token) });
  cleanups.push(() => started.close());
  return started;
}

async function gateway(config: ConfigInput, env: Record<string, string> = {}, dataDir?: string): Promise<RunningGateway> {
  const log = pino({ level: 'debug' }, { write: (line: string) => void logged.push(line) });
  const tg = await startGateway(
    { ...config, settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } }, ...config.settings } },
    env,
    { log, ...(dataDir ? { dataDir } : {}) },
  );
  cleanups.push(() => tg.stop());
  return tg;
}

/** A provider authorised by an app registration's client secret at `entra`. */
function clientSecretProvider(azure: AzureUpstream, entra: ScriptedEntra, extra: Record<string, unknown> = {}) {
  return {
    type: 'azure',
    base_url: azure.url,
    api_version: '2024-10-21',
    auth: { type: 'entra' as const, credential: 'client_secret' as const, tenant_id: 'tenant-1', client_id: 'client-1', client_secret: SECRET, authority_host: entra.url },
    ...extra,
  };
}

const ask = (client: OpenAI, model: string, content = 'hello entra') => client.chat.completions.create({ model, messages: [{ role: 'user', content }] });

function tokenCalls(entra: ScriptedEntra): number {
  return entra.calls.length;
}

describe('Azure OpenAI with a Microsoft Entra ID client secret', () => {
  let entra: ScriptedEntra;
  let azure: AzureUpstream;
  let tg: RunningGateway;

  beforeAll(async () => {
    entra = await entraEndpoint();
    azure = await azureResource(entra);
    tg = await gateway({ providers: { azure: clientSecretProvider(azure, entra) } }, { AZURE_OPENAI_API_KEY: 'env-key-not-for-entra' });
  });

  it('fetches one token with the client-credentials grant and reuses it across requests, streams included', async () => {
    const first = await ask(tg.client, 'azure/gpt-4o-prod');
    expect(first.choices[0]?.message.content).toBe('echo: hello entra');
    const stream = await tg.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages: [{ role: 'user', content: 'streamed' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: streamed');
    await ask(tg.client, 'azure/gpt-4o-prod');

    expect(tokenCalls(entra)).toBe(1);
    const call = entra.calls[0]!;
    expect(call.method).toBe('POST');
    expect(call.path).toBe('/tenant-1/oauth2/v2.0/token');
    expect(call.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(call.form).toEqual({ grant_type: 'client_credentials', client_id: 'client-1', client_secret: SECRET, scope: 'https://cognitiveservices.azure.com/.default' });
    expect(azure.calls).toHaveLength(3);
    for (const upstreamCall of azure.calls) {
      expect(upstreamCall.headers.authorization).toMatch(/^Bearer eyJ/);
      // Neither the environment's key nor any other goes beside the token.
      expect(upstreamCall.headers['api-key']).toBeUndefined();
    }
  });

  it('takes a 401 from Azure as a revoked token: drops it, fetches a new one and calls again, once', async () => {
    await ask(tg.client, 'azure/gpt-4o-prod');
    const before = tokenCalls(entra);
    azure.reset();
    entra.revokeAll();
    const answer = await ask(tg.client, 'azure/gpt-4o-prod', 'after revocation');
    expect(answer.choices[0]?.message.content).toBe('echo: after revocation');
    expect(tokenCalls(entra)).toBe(before + 1);
    expect(azure.calls).toHaveLength(2);
    expect(azure.calls[1]?.headers.authorization).not.toBe(azure.calls[0]?.headers.authorization);

    // A token refused again is not fetched over and over: the request fails with Azure's 401 after one retry.
    azure.reset();
    refusingEveryToken = true;
    try {
      const tokensBefore = tokenCalls(entra);
      const error = await ask(tg.client, 'azure/gpt-4o-prod').catch((err: unknown) => err);
      expect(error).toBeInstanceOf(APIError);
      expect((error as APIError).status).toBe(401);
      expect(azure.calls).toHaveLength(2);
      expect(tokenCalls(entra) - tokensBefore).toBe(1);
    } finally {
      refusingEveryToken = false;
    }
  });

  it("authorises the v1 API's Responses pass-through with the token too", async () => {
    const v1 = await gateway({ providers: { azure: { ...clientSecretProvider(azure, entra), api_version: undefined } } });
    azure.reset();
    const response = await v1.client.responses.create({ model: 'azure/gpt-4o-prod', input: 'responses with entra' });
    expect(response.output_text).toContain('responses with entra');
    expect(azure.calls.map((call) => call.path)).toEqual(['/openai/v1/responses']);
    for (const call of azure.calls) {
      expect(call.headers.authorization).toMatch(/^Bearer eyJ/);
      expect(call.headers['api-key']).toBeUndefined();
    }
  });

  it("uses the identity over a client's own x-tollgate-provider-key, as a configured key is", async () => {
    azure.reset();
    const byo = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { 'x-tollgate-provider-key': 'client-azure-key-1234' } });
    expect((await ask(byo, 'azure/gpt-4o-prod')).choices[0]?.message.content).toBe('echo: hello entra');
    expect(azure.calls[0]?.headers['api-key']).toBeUndefined();
    expect(azure.calls[0]?.headers.authorization).toMatch(/^Bearer eyJ/);
  });

  it('never shows the client secret: /api/config masks it, errors and logs do not hold it', async () => {
    const config = await (await fetch(`${tg.url}/api/config`)).text();
    expect(config).not.toContain(SECRET);
    const view = JSON.parse(config) as any;
    const provider = (view.providers ?? view.config?.providers)?.azure ?? view.providers?.find?.((p: any) => p.name === 'azure');
    expect(JSON.stringify(provider)).toContain('****-xyz');
    const providers = await (await fetch(`${tg.url}/api/providers`)).text();
    expect(providers).not.toContain(SECRET);
    const logs = await (await fetch(`${tg.url}/api/logs?limit=50`)).text();
    expect(logs).not.toContain(SECRET);
    expect(logged.join('\n')).not.toContain(SECRET);
  });
});

describe('an Entra identity set through the API', () => {
  it('is used, shown with its secret masked everywhere, refuses references and survives a masked write-back', async () => {
    const apiSecret = 'api-set-entra-secret-DISTINCT-9f3e';
    const entra = await entraEndpoint({ clientSecret: apiSecret });
    const azure = await azureResource(entra);
    const dataDir = mkdtempSync(join(dir, 'data-'));
    const tg = await gateway({}, {}, dataDir);
    const { api } = gatewayApi(() => tg.url);
    const auth = { type: 'entra', credential: 'client_secret', tenant_id: 'tenant-1', client_id: 'client-1', client_secret: apiSecret, authority_host: entra.url };
    const put = await api('PUT', '/api/providers/aoai', { type: 'azure', base_url: azure.url, api_version: '2024-10-21', auth });
    expect(put.status).toBe(201);
    expect(put.body.auth.client_secret).toBe('****9f3e');
    expect((await ask(tg.client, 'aoai/gpt-4o-prod')).choices[0]?.message.content).toBe('echo: hello entra');
    expect(entra.calls[0]?.form.client_secret).toBe(apiSecret);

    const referenced = await api('PUT', '/api/providers/aoai', { type: 'azure', base_url: azure.url, auth: { ...auth, client_secret: 'env:HOME' } });
    expect(referenced.status).toBe(400);
    expect(JSON.stringify(referenced.body)).toContain('auth.client_secret');

    // What the API showed, written back as it was read: the mask stands for the stored secret.
    const shown = (await api('GET', '/api/providers/aoai')).body;
    const { name: _name, source: _source, keys: _keys, ...writable } = shown;
    const back = await api('PUT', '/api/providers/aoai', writable);
    expect(back.status).toBe(200);
    entra.revokeAll();
    expect((await ask(tg.client, 'aoai/gpt-4o-prod')).choices[0]?.message.content).toBe('echo: hello entra');
    expect(entra.calls.at(-1)?.form.client_secret).toBe(apiSecret);

    for (const path of ['/api/config', '/api/config?layer=api', '/api/providers', '/api/providers/aoai', '/api/audit?limit=100']) {
      const read = await api('GET', path);
      expect(read.status).toBe(200);
      expect(JSON.stringify(read.body)).not.toContain(apiSecret.slice(0, -4));
    }
    expect(logged.join('\n')).not.toContain(apiSecret.slice(0, -4));
    // Stored sealed, as keys are: the data directory never holds it in the clear.
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const file of readdirSync(dataDir, { recursive: true, withFileTypes: true })) {
      if (file.isFile()) expect(readFileSync(join(file.parentPath, file.name)).includes(apiSecret)).toBe(false);
    }
  });
});

describe('a path on the gateway machine through the API', () => {
  it('is refused for a federated token file or a certificate file, so the API cannot have a file read and sent out', async () => {
    // Whatever file the path names would be sent as the client assertion to the authority host the same call names.
    const entra = await entraEndpoint({ clientId: 'wi-client', tenantId: 'wi-tenant', assertion: () => 'eyJ.federated-api.sig' });
    const azure = await azureResource(entra);
    const hostFile = join(dir, 'host-only-secret.txt');
    writeFileSync(hostFile, 'HOST-ONLY-CONTENT-7d1f');
    const tokenFile = join(dir, 'wi-token');
    writeFileSync(tokenFile, 'eyJ.federated-api.sig');
    const tg = await gateway(
      { providers: { wi: { type: 'azure', base_url: azure.url, auth: { type: 'entra', credential: 'workload_identity', tenant_id: 'wi-tenant', client_id: 'wi-client', federated_token_file: tokenFile, authority_host: entra.url } } } },
      { AZURE_FEDERATED_TOKEN_FILE: tokenFile },
    );
    const { api } = gatewayApi(() => tg.url);
    const common = { type: 'entra', tenant_id: 'wi-tenant', client_id: 'wi-client', authority_host: entra.url };
    for (const [field, auth] of [
      ['federated_token_file', { ...common, credential: 'workload_identity', federated_token_file: hostFile }],
      ['certificate_file', { ...common, credential: 'client_certificate', certificate_file: hostFile }],
    ] as const) {
      const put = await api('PUT', '/api/providers/probe', { type: 'azure', base_url: azure.url, auth });
      expect(put.status).toBe(400);
      expect(put.body.error.param).toBe(`providers.probe.auth.${field}`);
      expect(put.body.error.message).toContain('accepted only in the config file and the environment');
    }
    await ask(tg.client, 'probe/gpt-4o-prod').catch(() => undefined);
    expect(entra.calls.map((call) => call.form.client_assertion)).not.toContain('HOST-ONLY-CONTENT-7d1f');

    // Without the path, the environment's file is the one read; the file's own identity read and written back stays.
    expect((await api('PUT', '/api/providers/probe', { type: 'azure', base_url: azure.url, auth: { ...common, credential: 'workload_identity' } })).status).toBe(201);
    const shown = (await api('GET', '/api/providers/wi')).body;
    const { name: _name, source: _source, keys: _keys, ...writable } = shown;
    expect((await api('PUT', '/api/providers/wi', { ...writable, timeouts: { first_byte_ms: 20_000 } })).status).toBe(200);
    expect((await ask(tg.client, 'wi/gpt-4o-prod', 'still the file')).choices[0]?.message.content).toBe('echo: still the file');
    expect((await ask(tg.client, 'probe/gpt-4o-prod', 'env file')).choices[0]?.message.content).toBe('echo: env file');
    expect(entra.calls.every((call) => call.form.client_assertion === 'eyJ.federated-api.sig')).toBe(true);
  });
});

describe("an Entra identity of the config file, read and written back through the API", () => {
  it('stays the file\'s: a secret rotated in the file afterwards is the one used', async () => {
    const oldSecret = 'file-entra-secret-retired-OLD1';
    const newSecret = 'file-entra-secret-rotated-NEW2';
    // Entra takes only the new secret: the old one was rotated out of the app registration.
    const entra = await entraEndpoint({ clientSecret: newSecret });
    const azure = await azureResource(entra);
    const configPath = join(mkdtempSync(join(dir, 'file-')), 'tollgate.config.json');
    const document = (secret: string) => JSON.stringify({ providers: { azure: { ...clientSecretProvider(azure, entra), auth: { ...clientSecretProvider(azure, entra).auth, client_secret: secret } } } });
    writeFileSync(configPath, document(oldSecret));
    const tg = await startGateway(parseConfigText(readFileSync(configPath, 'utf8'), configPath), {}, { configPath });
    cleanups.push(() => tg.stop());
    const { api } = gatewayApi(() => tg.url);

    // An operator's script changes the timeouts: it reads the provider and writes it back, the identity as shown.
    const shown = (await api('GET', '/api/providers/azure')).body;
    expect(shown.auth.client_secret).toBe('****OLD1');
    const { name: _name, source: _source, keys: _keys, ...writable } = shown;
    expect((await api('PUT', '/api/providers/azure', { ...writable, timeouts: { first_byte_ms: 20_000 } })).status).toBe(200);
    expect(JSON.stringify((await api('GET', '/api/config?layer=api')).body)).not.toContain('****OLD1');

    writeFileSync(`${configPath}.tmp`, document(newSecret));
    renameSync(`${configPath}.tmp`, configPath);
    const deadline = Date.now() + 5000;
    while ((await api('GET', '/api/providers/azure')).body.auth.client_secret !== '****NEW2') {
      if (Date.now() > deadline) throw new Error('the rotated secret was never in force');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await ask(tg.client, 'azure/gpt-4o-prod', 'rotated in the file')).choices[0]?.message.content).toBe('echo: rotated in the file');
    expect(entra.calls.at(-1)?.form.client_secret).toBe(newSecret);
    expect(tg.gateway.configService.current().providers.get('azure')?.timeouts.firstByteMs).toBe(20_000);
  });
});

describe('token lifetime and concurrency', () => {
  it('fetches once for concurrent first requests, and renews a token before it expires', async () => {
    const entra = await entraEndpoint();
    entra.setMode({ kind: 'ok', expiresIn: 2 });
    const azure = await azureResource(entra);
    const tg = await gateway({ providers: { azure: clientSecretProvider(azure, entra) } });
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => ask(tg.client, 'azure/gpt-4o-prod', `concurrent ${i}`)));
    expect(answers.map((a) => a.choices[0]?.message.content)).toEqual(Array.from({ length: 8 }, (_, i) => `echo: concurrent ${i}`));
    expect(tokenCalls(entra)).toBe(1);
    await ask(tg.client, 'azure/gpt-4o-prod');
    expect(tokenCalls(entra)).toBe(1);
    // Two seconds of life: renewed at half of it, before Azure would refuse it.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await ask(tg.client, 'azure/gpt-4o-prod');
    expect(tokenCalls(entra)).toBe(2);
    const tokens = new Set(azure.calls.map((c) => c.headers.authorization));
    expect(tokens.size).toBe(2);
  });
});

describe('a renewal that fails while the token is still valid', () => {
  it('keeps answering with the token in hand, renews it in the background, and tries again only after a pause', async () => {
    const entra = await entraEndpoint();
    // A token good for an hour that Entra says to renew after one second (as it says refresh_in of long-lived tokens).
    entra.setMode({ kind: 'ok', expiresIn: 3600, refreshIn: 1 });
    const azure = await azureResource(entra);
    const tg = await gateway({ providers: { azure: clientSecretProvider(azure, entra) } });
    await ask(tg.client, 'azure/gpt-4o-prod');
    expect(tokenCalls(entra)).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1100));

    // Entra is down at renewal time: the token it issued is valid for the rest of the hour, so requests go on with it.
    entra.setMode({ kind: 'error', status: 503, error: 'temporarily_unavailable', description: 'AADSTS90033: A transient error has occurred. Please try again.' });
    for (const i of [1, 2, 3]) expect((await ask(tg.client, 'azure/gpt-4o-prod', `during the outage ${i}`)).choices[0]?.message.content).toBe(`echo: during the outage ${i}`);
    // One renewal was tried, not one per request.
    expect(tokenCalls(entra)).toBe(2);
    expect(new Set(azure.calls.map((c) => c.headers.authorization)).size).toBe(1);

    // A slow endpoint does not hold requests either, and once Entra is back (after the pause) the token is renewed.
    entra.setMode({ kind: 'slow', delayMs: 1500 });
    await new Promise((resolve) => setTimeout(resolve, 3100));
    const started = Date.now();
    await ask(tg.client, 'azure/gpt-4o-prod', 'while renewing');
    expect(Date.now() - started).toBeLessThan(1000);
    await new Promise((resolve) => setTimeout(resolve, 1700));
    entra.setMode({ kind: 'ok' });
    await ask(tg.client, 'azure/gpt-4o-prod', 'renewed');
    expect(tokenCalls(entra)).toBe(3);
    expect(azure.calls.at(-1)?.headers.authorization).not.toBe(azure.calls[0]?.headers.authorization);
  });

  it('fetches a new token before answering once the one in hand has expired', async () => {
    const entra = await entraEndpoint();
    entra.setMode({ kind: 'ok', expiresIn: 1 });
    const azure = await azureResource(entra);
    const tg = await gateway({ providers: { azure: clientSecretProvider(azure, entra) } });
    await ask(tg.client, 'azure/gpt-4o-prod');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    entra.setMode({ kind: 'error', status: 503, error: 'temporarily_unavailable', description: 'AADSTS90033: A transient error has occurred.' });
    const error = (await ask(tg.client, 'azure/gpt-4o-prod').catch((err: unknown) => err)) as APIError;
    expect(error.status).toBe(502);
    expect(error.message).toContain('AADSTS90033');
    expect(azure.calls).toHaveLength(1);
  });
});

describe('workload identity and managed identity', () => {
  it('presents the federated token file as the client assertion, re-read when it rotates', async () => {
    const file = join(dir, 'azure-identity-token');
    let current = 'eyJ.federated-1.sig';
    writeFileSync(file, `${current}\n`);
    const entra = await entraEndpoint({ clientId: 'wi-client', tenantId: 'wi-tenant', assertion: () => current });
    entra.setMode({ kind: 'ok', expiresIn: 1 });
    const azure = await azureResource(entra);
    // As the AKS webhook sets them: the provider names the method, the environment the identity.
    const tg = await gateway(
      { providers: { azure: { base_url: azure.url, api_version: '2024-10-21', auth: { type: 'entra', credential: 'workload_identity' } } } },
      { AZURE_CLIENT_ID: 'wi-client', AZURE_TENANT_ID: 'wi-tenant', AZURE_FEDERATED_TOKEN_FILE: file, AZURE_AUTHORITY_HOST: entra.url },
    );
    await ask(tg.client, 'azure/gpt-4o-prod');
    expect(entra.calls[0]?.form).toMatchObject({
      grant_type: 'client_credentials',
      client_id: 'wi-client',
      scope: 'https://cognitiveservices.azure.com/.default',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: 'eyJ.federated-1.sig',
    });
    current = 'eyJ.federated-2.sig';
    writeFileSync(file, current);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const answer = await ask(tg.client, 'azure/gpt-4o-prod', 'rotated');
    expect(answer.choices[0]?.message.content).toBe('echo: rotated');
    expect(entra.calls.at(-1)?.form.client_assertion).toBe('eyJ.federated-2.sig');
  });

  it("signs a client assertion with the app registration's certificate, read again when the file is renewed", async () => {
    // As Key Vault or the portal issues one: an RSA key and its certificate in one PEM file.
    const pem = (name: string): string => {
      const keyFile = join(dir, `${name}.key`);
      const certFile = join(dir, `${name}.crt`);
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', `/CN=${name}`], { stdio: 'ignore' });
      return `${readFileSync(keyFile, 'utf8')}${readFileSync(certFile, 'utf8')}`;
    };
    const first = pem('tollgate-app-1');
    const certFile = join(dir, 'app-cert.pem');
    writeFileSync(certFile, first);
    const entra = await entraEndpoint({ clientId: 'cert-client', tenantId: 'cert-tenant', certificate: first.slice(first.indexOf('-----BEGIN CERTIFICATE-----')) });
    entra.setMode({ kind: 'ok', expiresIn: 1 });
    const azure = await azureResource(entra);
    const tg = await gateway(
      { providers: { azure: { base_url: azure.url, auth: { type: 'entra', credential: 'client_certificate', tenant_id: 'cert-tenant', client_id: 'cert-client', authority_host: entra.url } } } },
      // As Azure's SDKs read it (EnvironmentCredential).
      { AZURE_CLIENT_CERTIFICATE_PATH: certFile },
    );
    expect((await ask(tg.client, 'azure/gpt-4o-prod', 'by certificate')).choices[0]?.message.content).toBe('echo: by certificate');
    expect(entra.calls[0]?.form).toMatchObject({ grant_type: 'client_credentials', client_id: 'cert-client', scope: 'https://cognitiveservices.azure.com/.default', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer' });
    expect(entra.calls[0]?.form.client_secret).toBeUndefined();

    // The file renewed with a certificate Entra does not know: the next token is asked for with it, and refused.
    writeFileSync(certFile, pem('tollgate-app-2'));
    await new Promise((resolve) => setTimeout(resolve, 600));
    const error = (await ask(tg.client, 'azure/gpt-4o-prod').catch((err: unknown) => err)) as APIError;
    expect(error.status).toBe(502);
    expect(error.message).toContain('AADSTS700027');
    expect(error.message).not.toContain('PRIVATE KEY');
  });

  it("gets an App Service managed identity's token from IDENTITY_ENDPOINT with its header", async () => {
    const entra = await entraEndpoint({ identityHeader: 'app-service-header' });
    const azure = await azureResource(entra);
    const tg = await gateway(
      {
        providers: {
          azure: { base_url: azure.url, api_version: '2024-10-21', auth: { type: 'entra', credential: 'managed_identity', client_id: 'user-assigned-1' } },
          // Azure AI Foundry's model inference takes the same identity's tokens.
          'azure-ai': { base_url: `${azure.url}/models`, auth: { type: 'entra', credential: 'managed_identity', client_id: 'user-assigned-1' } },
        },
      },
      { IDENTITY_ENDPOINT: `${entra.url}/msi/token`, IDENTITY_HEADER: 'app-service-header' },
    );
    await ask(tg.client, 'azure/gpt-4o-prod');
    await ask(tg.client, 'azure/gpt-4o-prod');
    expect((await ask(tg.client, 'azure-ai/Phi-4', 'foundry')).choices[0]?.message.content).toBe('echo: foundry');
    // One identity, one token, whichever provider uses it.
    expect(entra.calls).toHaveLength(1);
    expect(azure.calls.at(-1)?.path).toBe('/models/chat/completions');
    expect(azure.calls.at(-1)?.headers.authorization).toBe(azure.calls[0]?.headers.authorization);
    expect(entra.calls[0]).toMatchObject({ method: 'GET', path: '/msi/token', query: { 'api-version': '2019-08-01', resource: 'https://cognitiveservices.azure.com', client_id: 'user-assigned-1' } });
    expect(entra.calls[0]?.headers['x-identity-header']).toBe('app-service-header');
  });
});

describe('a user-assigned managed identity named by its resource id or object id', () => {
  it('asks App Service for that identity, each its own token, and the config refuses two names for one', async () => {
    const entra = await entraEndpoint({ identityHeader: 'app-service-header' });
    const azure = await azureResource(entra);
    const resourceId = '/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-ai/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-gateway';
    const tg = await gateway(
      {
        providers: {
          azure: { base_url: azure.url, auth: { type: 'entra', credential: 'managed_identity', resource_id: resourceId } },
          byobject: { type: 'azure', base_url: azure.url, auth: { type: 'entra', credential: 'managed_identity', object_id: '5e0c3a9d-0000-4000-8000-000000000002' } },
        },
      },
      // The variable a workload identity would read is not taken for an identity named otherwise.
      { IDENTITY_ENDPOINT: `${entra.url}/msi/token`, IDENTITY_HEADER: 'app-service-header', AZURE_CLIENT_ID: 'not-this-identity' },
    );
    expect((await ask(tg.client, 'azure/gpt-4o-prod', 'by resource id')).choices[0]?.message.content).toBe('echo: by resource id');
    expect((await ask(tg.client, 'byobject/gpt-4o-prod', 'by object id')).choices[0]?.message.content).toBe('echo: by object id');
    expect(entra.calls.map((call) => call.query)).toEqual([
      { 'api-version': '2019-08-01', resource: 'https://cognitiveservices.azure.com', mi_res_id: resourceId },
      { 'api-version': '2019-08-01', resource: 'https://cognitiveservices.azure.com', object_id: '5e0c3a9d-0000-4000-8000-000000000002' },
    ]);
    const { api } = gatewayApi(() => tg.url);
    const both = await api('PUT', '/api/providers/twice', { type: 'azure', base_url: azure.url, auth: { type: 'entra', credential: 'managed_identity', client_id: 'c-1', resource_id: resourceId } });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toContain('client_id and resource_id both name a user-assigned identity');
  });
});

describe('a managed identity behind a company proxy', () => {
  it('asks the managed-identity endpoint directly, as Microsoft requires, while Azure is called through the proxy', async () => {
    const entra = await entraEndpoint({ identityHeader: 'app-service-header' });
    const azure = await azureResource(entra);
    const host = (url: string) => new URL(url).host;
    // The proxy cannot reach the host's own identity endpoint (IMDS's 169.254.169.254, App Service's loopback one).
    const proxy = await startConnectProxy({ unreachable: [host(entra.url)] });
    cleanups.push(() => proxy.close());
    const tg = await gateway(
      { providers: { azure: { base_url: azure.url, api_version: '2024-10-21', auth: { type: 'entra', credential: 'managed_identity' } } }, settings: { network: { proxy: proxy.url } } },
      { IDENTITY_ENDPOINT: `${entra.url}/msi/token`, IDENTITY_HEADER: 'app-service-header' },
    );
    const answer = await ask(tg.client, 'azure/gpt-4o-prod', 'behind the proxy');
    expect(answer.choices[0]?.message.content).toBe('echo: behind the proxy');
    expect(entra.calls).toHaveLength(1);
    expect(proxy.tunnels).toEqual([host(azure.url)]);
  });
});

describe('a sovereign cloud', () => {
  /** An Azure Government resource (`<name>.openai.azure.us`), reached through a proxy that knows its name. */
  async function govResource(entra: ScriptedEntra) {
    const azure = await azureResource(entra);
    const port = new URL(azure.url).port;
    const proxy = await startConnectProxy({ resolve: { [`aoai-gov.openai.azure.us:${port}`]: `127.0.0.1:${port}` } });
    cleanups.push(() => proxy.close());
    return { azure, proxy, baseUrl: `http://aoai-gov.openai.azure.us:${port}` };
  }

  it("asks for a token for Azure Government's Azure OpenAI when the resource is there, by managed identity or client secret", async () => {
    const entra = await entraEndpoint({ identityHeader: 'gov-header', resource: 'https://cognitiveservices.azure.us' });
    const { azure, proxy, baseUrl } = await govResource(entra);
    const tg = await gateway(
      {
        providers: {
          azure: { base_url: baseUrl, auth: { type: 'entra', credential: 'managed_identity' } },
          aoai: { type: 'azure', base_url: baseUrl, auth: { type: 'entra', credential: 'client_secret', tenant_id: 'tenant-1', client_id: 'client-1', client_secret: SECRET, authority_host: entra.url } },
        },
        settings: { network: { proxy: proxy.url, no_proxy: ['127.0.0.1'] } },
      },
      { IDENTITY_ENDPOINT: `${entra.url}/msi/token`, IDENTITY_HEADER: 'gov-header' },
    );
    expect((await ask(tg.client, 'azure/gpt-4o-prod', 'usgovvirginia')).choices[0]?.message.content).toBe('echo: usgovvirginia');
    expect(entra.calls[0]?.query.resource).toBe('https://cognitiveservices.azure.us');
    expect((await ask(tg.client, 'aoai/gpt-4o-prod', 'by secret')).choices[0]?.message.content).toBe('echo: by secret');
    expect(entra.calls[1]?.form.scope).toBe('https://cognitiveservices.azure.us/.default');
    expect(azure.calls.map((c) => c.path)).toEqual(['/openai/v1/chat/completions', '/openai/v1/chat/completions']);
  });
});

describe('a token endpoint that fails', () => {
  let openai: ScriptedUpstream;

  beforeAll(async () => {
    openai = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
    cleanups.push(() => openai.close());
  });

  it('answers a clear 502 naming the provider and Entra, without the secret, and a fallback takes the request', async () => {
    const entra = await entraEndpoint({ clientSecret: 'the-right-secret-value' });
    const azure = await azureResource(entra);
    const tg = await gateway({
      providers: { azure: clientSecretProvider(azure, entra), openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream-test' } },
      routes: { chat: { targets: [{ model: 'azure/gpt-4o-prod' }], fallbacks: ['openai/gpt-4o-mini'] } },
      settings: { routing: { retry: { max_attempts: 2 } } },
    });
    const error = await ask(tg.client, 'azure/gpt-4o-prod').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(APIError);
    const apiError = error as APIError;
    expect(apiError.status).toBe(502);
    expect(apiError.message).toContain('azure: Microsoft Entra ID token (client secret of client client-1)');
    expect(apiError.message).toContain('AADSTS7000215');
    expect(apiError.message).not.toContain(SECRET);
    expect(azure.calls).toHaveLength(0);

    const viaRoute = await tg.client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'route' }] }).withResponse();
    expect(viaRoute.data.choices[0]?.message.content).toBe('echo: route');
    expect(viaRoute.response.headers.get('x-tollgate-provider')).toBe('openai');
    expect(viaRoute.response.headers.get('x-tollgate-fallback')).toBe('true');
  });

  it('bounds a slow token endpoint by the provider first-byte timeout', async () => {
    const entra = await entraEndpoint();
    entra.setMode({ kind: 'slow', delayMs: 3000 });
    const azure = await azureResource(entra);
    const tg = await gateway({ providers: { azure: clientSecretProvider(azure, entra, { timeouts: { first_byte_ms: 300 } }) } });
    const started = Date.now();
    const error = (await ask(tg.client, 'azure/gpt-4o-prod').catch((err: unknown) => err)) as APIError;
    expect(Date.now() - started).toBeLessThan(2500);
    expect(error.status).toBe(502);
    expect(error.message).toMatch(/azure: Microsoft Entra ID token .*did not answer within 300 ms/);
  });

  it('says the proxy refused the tunnel to the authority host, rather than that the endpoint did not answer', async () => {
    const entra = await entraEndpoint();
    const azure = await azureResource(entra);
    const proxy: ConnectProxy = await startConnectProxy({ unreachable: [new URL(entra.url).host] });
    cleanups.push(() => proxy.close());
    const tg = await gateway({ providers: { azure: clientSecretProvider(azure, entra) }, settings: { network: { proxy: proxy.url } } });
    const started = Date.now();
    const error = (await ask(tg.client, 'azure/gpt-4o-prod').catch((err: unknown) => err)) as APIError;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(error.status).toBe(502);
    expect(error.message).toContain(`azure: Microsoft Entra ID token (client secret of client client-1): the proxy refused the tunnel to ${entra.url}/tenant-1/oauth2/v2.0/token (Proxy response (502)`);
    expect(error.message).toContain('check settings.network');
    expect(error.message).not.toContain('did not answer');
  });

  it('fetches the token through the outbound network (the configured proxy)', async () => {
    const proxy: ConnectProxy = await startConnectProxy();
    cleanups.push(() => proxy.close());
    const entra = await entraEndpoint();
    const azure = await azureResource(entra);
    const tg = await gateway({ providers: { azure: clientSecretProvider(azure, entra) }, settings: { network: { proxy: proxy.url } } });
    const answer = await ask(tg.client, 'azure/gpt-4o-prod', 'through the proxy');
    expect(answer.choices[0]?.message.content).toBe('echo: through the proxy');
    // The token request tunnelled through the proxy before the call it authorised.
    const host = (url: string) => new URL(url).host;
    expect(proxy.tunnels).toEqual([host(entra.url), host(azure.url)]);
    expect(entra.calls).toHaveLength(1);
  });
});
