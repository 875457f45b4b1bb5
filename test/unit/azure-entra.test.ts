import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { configFileSchema } from '../../src/config/schema.js';
import type { Env } from '../../src/config/secret-ref.js';
import { tokenRequest } from '../../src/providers/azure/entra-token.js';
import { gatewayError } from '../../src/core/errors.js';

function entraOf(provider: Record<string, unknown>, env: Env = {}) {
  const config = resolveRuntimeConfig({ api: {}, file: configFileSchema.parse({ providers: { azure: { base_url: 'https://r.openai.azure.com', ...provider } } }) }, env, 1);
  return config.providers.get('azure');
}

const fail = (message: string) => gatewayError('provider_token_failed', message);

describe('providers.<name>.auth (Microsoft Entra ID)', () => {
  it('asks IMDS for a managed identity token for Cognitive Services, with Metadata: true', async () => {
    const azure = entraOf({ auth: { type: 'entra', credential: 'managed_identity' } });
    expect(azure?.keyRequired).toBe(false);
    const entra = azure?.options.entra;
    expect(entra).toEqual({ kind: 'managed_identity', scope: 'https://cognitiveservices.azure.com/.default', clientId: null, identityEndpoint: null, identityHeader: null });
    const call = await tokenRequest(entra!, fail);
    expect(call.method).toBe('GET');
    expect(call.url).toBe('http://169.254.169.254/metadata/identity/oauth2/token?resource=https%3A%2F%2Fcognitiveservices.azure.com&api-version=2018-02-01');
    expect(call.headers).toEqual({ metadata: 'true' });
  });

  it('names a user-assigned identity to IMDS by msi_res_id or object_id, and refuses those fields elsewhere', async () => {
    const resourceId = '/subscriptions/s/resourcegroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-1';
    const byResource = entraOf({ auth: { type: 'entra', credential: 'managed_identity', resource_id: resourceId } }, { AZURE_CLIENT_ID: 'ignored' })!.options.entra!;
    expect((await tokenRequest(byResource, fail)).url).toBe(`http://169.254.169.254/metadata/identity/oauth2/token?resource=https%3A%2F%2Fcognitiveservices.azure.com&msi_res_id=${encodeURIComponent(resourceId)}&api-version=2018-02-01`);
    const byObject = entraOf({ auth: { type: 'entra', credential: 'managed_identity', object_id: 'obj-1' } })!.options.entra!;
    expect((await tokenRequest(byObject, fail)).url).toContain('&object_id=obj-1&');
    expect(() => entraOf({ auth: { type: 'entra', credential: 'client_secret', tenant_id: 't', client_id: 'c', client_secret: 'x', resource_id: resourceId } })).toThrow(/resource_id: not used by credential client_secret/);
    expect(() => entraOf({ auth: { type: 'entra', credential: 'managed_identity', object_id: 'o', resource_id: resourceId } })).toThrow(/resource_id and object_id both name/);
    expect(() => configFileSchema.parse({ providers: { azure: { auth: { type: 'entra', credential: 'managed_identity', resource_id: 'id-1' } } } })).toThrow(/resource id/);
  });

  it("refuses a managed identity on Azure Arc or Service Fabric, whose endpoints speak another protocol, instead of failing every request", () => {
    const auth = { type: 'entra', credential: 'managed_identity' };
    expect(() => entraOf({ auth }, { IDENTITY_ENDPOINT: 'http://localhost:40342/metadata/identity/oauth2/token', IMDS_ENDPOINT: 'http://localhost:40342' })).toThrow(
      /providers\.azure\.auth: the managed identity of Azure Arc .* is not supported/,
    );
    expect(() => entraOf({ auth }, { IDENTITY_ENDPOINT: 'https://10.0.0.4:2377/metadata/identity/oauth2/token', IDENTITY_HEADER: 'h', IDENTITY_SERVER_THUMBPRINT: 'ab12' })).toThrow(/Service Fabric/);
    // App Service and Container Apps: IDENTITY_ENDPOINT and IDENTITY_HEADER only.
    expect(entraOf({ auth }, { IDENTITY_ENDPOINT: 'http://127.0.0.1:41000/msi/token', IDENTITY_HEADER: 'h' })?.options.entra).toMatchObject({ identityEndpoint: 'http://127.0.0.1:41000/msi/token' });
  });

  it('reads the client secret from an env: reference and the authority from AZURE_AUTHORITY_HOST (a sovereign cloud)', async () => {
    const azure = entraOf(
      { auth: { type: 'entra', credential: 'client_secret', tenant_id: 't', client_id: 'c', client_secret: 'env:MY_SECRET' } },
      { MY_SECRET: 's3cret-value', AZURE_AUTHORITY_HOST: 'https://login.microsoftonline.us', AZURE_OPENAI_API_KEY: 'not-used' },
    );
    expect(azure?.keys).toEqual([]);
    expect(azure?.rawAuth?.client_secret).toBe('env:MY_SECRET');
    const call = await tokenRequest(azure!.options.entra!, fail);
    expect(call.url).toBe('https://login.microsoftonline.us/t/oauth2/v2.0/token');
    expect(new URLSearchParams(call.body).get('client_secret')).toBe('s3cret-value');
  });

  it("takes a national cloud's authority and audience from the resource's endpoint, or from the authority named", async () => {
    const auth = { type: 'entra', credential: 'client_secret', tenant_id: 't', client_id: 'c', client_secret: 'secret-value' };
    const gov = entraOf({ base_url: 'https://r.openai.azure.us', auth })!.options.entra!;
    expect(gov.scope).toBe('https://cognitiveservices.azure.us/.default');
    expect((await tokenRequest(gov, fail)).url).toBe('https://login.microsoftonline.us/t/oauth2/v2.0/token');
    const china = entraOf({ base_url: 'https://r.openai.azure.cn/openai/v1', auth: { type: 'entra', credential: 'managed_identity' } })!.options.entra!;
    expect((await tokenRequest(china, fail)).url).toContain('resource=https%3A%2F%2Fcognitiveservices.azure.cn&');
    // A private endpoint (API Management) in front of a Government resource: the authority says which cloud.
    const behindApim = entraOf({ base_url: 'https://apim.example.com/aoai', auth }, { AZURE_AUTHORITY_HOST: 'https://login.microsoftonline.us/' })!.options.entra!;
    expect(behindApim.scope).toBe('https://cognitiveservices.azure.us/.default');
    // What the operator names wins; the public cloud stays the default.
    expect(entraOf({ base_url: 'https://r.openai.azure.us', auth: { ...auth, scope: 'https://ai.azure.com/.default' } })!.options.entra!.scope).toBe('https://ai.azure.com/.default');
    const pub = entraOf({ auth })!.options.entra!;
    expect(pub.scope).toBe('https://cognitiveservices.azure.com/.default');
    expect((await tokenRequest(pub, fail)).url).toBe('https://login.microsoftonline.com/t/oauth2/v2.0/token');
  });

  it('says why a certificate file cannot sign, without quoting it: missing, encrypted, not RSA, no certificate, another key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-entra-cert-'));
    try {
      const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
      const file = (name: string) => join(dir, name);
      openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', file('a.key'), '-out', file('a.crt'), '-days', '1', '-subj', '/CN=a');
      openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', file('b.key'), '-out', file('b.crt'), '-days', '1', '-subj', '/CN=b');
      openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', file('ec.key'), '-out', file('ec.crt'), '-days', '1', '-subj', '/CN=ec');
      openssl('pkey', '-in', file('a.key'), '-aes256', '-passout', 'pass:pw', '-out', file('enc.key'));
      const read = (name: string) => readFileSync(file(name), 'utf8');
      const cases: Array<[string, string, RegExp]> = [
        ['missing.pem', '', /cannot read the certificate file .*missing\.pem \(ENOENT\)/],
        ['encrypted.pem', read('enc.key') + read('a.crt'), /private key is encrypted/],
        ['ec.pem', read('ec.key') + read('ec.crt'), /private key is ec; Entra takes RSA/],
        ['keyonly.pem', read('a.key'), /no certificate in PEM beside the key/],
        ['mixed.pem', read('a.key') + read('b.crt'), /not the private key's/],
      ];
      for (const [name, content, message] of cases) {
        if (content) writeFileSync(file(name), content);
        const entra = entraOf({ auth: { type: 'entra', credential: 'client_certificate', tenant_id: 't', client_id: 'c', certificate_file: file(name) } })!.options.entra!;
        const error = await tokenRequest(entra, fail).catch((err: unknown) => err as Error);
        expect((error as Error).message).toMatch(message);
        expect((error as Error).message).not.toContain('-----');
      }
      expect(() => entraOf({ auth: { type: 'entra', credential: 'client_certificate', tenant_id: 't', client_id: 'c' } })).toThrow(/certificate_file: required .*AZURE_CLIENT_CERTIFICATE_PATH/);
      expect(() => entraOf({ auth: { type: 'entra', credential: 'client_certificate', tenant_id: 't', client_id: 'c', certificate_file: '/x', client_secret: 's' } })).toThrow(/client_secret: not used by credential client_certificate/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses auth beside keys, on a provider that is not Azure, without its identity, or with another method\'s fields', () => {
    const auth = { type: 'entra', credential: 'client_secret', tenant_id: 't', client_id: 'c', client_secret: 'secret-value' };
    expect(() => entraOf({ api_key: 'k', auth })).toThrow(/replaces API keys/);
    expect(() => resolveRuntimeConfig({ api: {}, file: configFileSchema.parse({ providers: { openai: { auth } } }) }, {}, 1)).toThrow(/azure and azure-ai provider types only/);
    expect(() => entraOf({ auth: { type: 'entra', credential: 'client_secret', client_id: 'c', client_secret: 'x' } })).toThrow(/tenant_id: required .*AZURE_TENANT_ID/);
    expect(() => entraOf({ auth: { type: 'entra', credential: 'managed_identity', client_secret: 'x' } })).toThrow(/client_secret: not used by credential managed_identity/);
    expect(() => configFileSchema.parse({ providers: { azure: { auth: { ...auth, authority_host: 'http://login.example.com' } } } })).toThrow(/https/);
  });
});
