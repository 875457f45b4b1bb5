import type { EntraCredential } from '../core/provider.js';
import type { ProviderConfig } from './schema.js';
import { ConfigError, resolveSecret, type Env } from './secret-ref.js';

export const PUBLIC_AUTHORITY_HOST = 'https://login.microsoftonline.com';
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

/**
 * Azure's national clouds, each with its own Entra authority and its own audience for Azure OpenAI and AI Foundry
 * (Azure's SDKs name them so: AzureOpenAIAudience, KnownFormRecognizerAudience). A token for the public cloud's
 * audience is refused there, so the cloud a resource's endpoint (or the authority) names picks the defaults.
 */
const NATIONAL_CLOUDS = [
  { domain: '.azure.us', authorities: ['login.microsoftonline.us'], authorityHost: 'https://login.microsoftonline.us', scope: 'https://cognitiveservices.azure.us/.default' },
  { domain: '.azure.cn', authorities: ['login.chinacloudapi.cn', 'login.partner.microsoftonline.cn'], authorityHost: 'https://login.chinacloudapi.cn', scope: 'https://cognitiveservices.azure.cn/.default' },
];

function hostOf(url: string | undefined): string {
  try {
    return url ? new URL(url).hostname.toLowerCase() : '';
  } catch {
    return '';
  }
}

type EntraAuthConfig = Extract<NonNullable<ProviderConfig['auth']>, { type: 'entra' }>;

/** The client secret an `auth` holds: only an Entra client_secret identity has one (AWS's chain has none). */
export function authClientSecret(auth: ProviderConfig['auth']): string | undefined {
  return auth?.type === 'entra' ? auth.client_secret : undefined;
}

/**
 * The Entra identity a provider's `auth` names, with what it leaves out read from the variables Azure's SDKs read
 * (the AKS workload-identity webhook sets AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE and
 * AZURE_AUTHORITY_HOST; App Service sets IDENTITY_ENDPOINT and IDENTITY_HEADER). The client secret is read like a
 * key: `env:`/`file:` references only from the config file.
 */
export function resolveEntraAuth(name: string, auth: EntraAuthConfig, source: 'api' | 'file', env: Env, dataDir: string, baseUrl?: string): EntraCredential {
  const where = `providers.${name}.auth`;
  // A path names a file on the gateway's machine, whose content would be sent to the authority host the same call
  // names: the operator's, as references are (the environment's AZURE_* paths still apply to an identity of the API).
  for (const field of ['federated_token_file', 'certificate_file'] as const) {
    if (source === 'api' && auth[field] !== undefined) {
      throw new ConfigError(`${where}.${field}: a path on the gateway's machine is accepted only in the config file and the environment, not through the API`);
    }
  }
  const need = (value: string | undefined, field: string, variable: string): string => {
    const found = value ?? (env[variable] || undefined);
    if (found === undefined) throw new ConfigError(`${where}.${field}: required for credential ${auth.credential} (or set ${variable})`);
    return found;
  };
  // The resource's endpoint says which cloud it is in; a private endpoint (API Management) leaves it to the authority.
  const endpointCloud = NATIONAL_CLOUDS.find((cloud) => hostOf(baseUrl).endsWith(cloud.domain));
  const authorityHost = auth.authority_host ?? (env.AZURE_AUTHORITY_HOST || endpointCloud?.authorityHost || PUBLIC_AUTHORITY_HOST);
  const cloud = endpointCloud ?? NATIONAL_CLOUDS.find((known) => known.authorities.includes(hostOf(authorityHost)));
  const scope = auth.scope ?? cloud?.scope ?? COGNITIVE_SERVICES_SCOPE;
  if (auth.credential === 'managed_identity') {
    const identityEndpoint = env.IDENTITY_ENDPOINT || null;
    // IDENTITY_ENDPOINT is also set where the token endpoint speaks another protocol than App Service's (Azure Arc's
    // challenge with a key file, Service Fabric's TLS pinning): said at once rather than failing every request.
    const elsewhere = identityEndpoint === null ? null : env.IMDS_ENDPOINT ? 'Azure Arc (IMDS_ENDPOINT is set)' : env.IDENTITY_SERVER_THUMBPRINT ? 'Service Fabric (IDENTITY_SERVER_THUMBPRINT is set)' : null;
    if (elsewhere) throw new ConfigError(`${where}: the managed identity of ${elsewhere} is not supported; use credential client_certificate or client_secret`);
    const identityHeader = identityEndpoint ? env.IDENTITY_HEADER || null : null;
    // One way to name a user-assigned identity: IMDS refuses a request naming it twice.
    const named = (['client_id', 'resource_id', 'object_id'] as const).filter((field) => auth[field] !== undefined);
    if (named.length > 1) throw new ConfigError(`${where}: ${named.join(' and ')} both name a user-assigned identity; keep one`);
    if (auth.resource_id !== undefined) return { kind: 'managed_identity', scope, clientId: null, userAssigned: { by: 'resource_id', id: auth.resource_id }, identityEndpoint, identityHeader };
    if (auth.object_id !== undefined) return { kind: 'managed_identity', scope, clientId: null, userAssigned: { by: 'object_id', id: auth.object_id }, identityEndpoint, identityHeader };
    return { kind: 'managed_identity', scope, clientId: auth.client_id ?? (env.AZURE_CLIENT_ID || null), identityEndpoint, identityHeader };
  }
  const tenantId = need(auth.tenant_id, 'tenant_id', 'AZURE_TENANT_ID');
  const clientId = need(auth.client_id, 'client_id', 'AZURE_CLIENT_ID');
  if (auth.credential === 'client_certificate') {
    return { kind: 'client_certificate', scope, authorityHost, tenantId, clientId, certificateFile: need(auth.certificate_file, 'certificate_file', 'AZURE_CLIENT_CERTIFICATE_PATH') };
  }
  if (auth.credential === 'workload_identity') {
    return { kind: 'workload_identity', scope, authorityHost, tenantId, clientId, tokenFile: need(auth.federated_token_file, 'federated_token_file', 'AZURE_FEDERATED_TOKEN_FILE') };
  }
  const raw = need(auth.client_secret, 'client_secret', 'AZURE_CLIENT_SECRET');
  const clientSecret = auth.client_secret === undefined ? raw : resolveSecret(raw, env, `${where}.client_secret`, { referencesAllowed: source === 'file', dataDir });
  return { kind: 'client_secret', scope, authorityHost, tenantId, clientId, clientSecret };
}

/** Fields that belong to another credential: written by mistake, they would be silently unused. */
export function checkEntraFields(name: string, auth: EntraAuthConfig): void {
  const foreign: Record<EntraAuthConfig['credential'], Array<keyof EntraAuthConfig>> = {
    client_secret: ['federated_token_file', 'certificate_file', 'resource_id', 'object_id'],
    client_certificate: ['client_secret', 'federated_token_file', 'resource_id', 'object_id'],
    workload_identity: ['client_secret', 'certificate_file', 'resource_id', 'object_id'],
    managed_identity: ['client_secret', 'certificate_file', 'federated_token_file', 'tenant_id', 'authority_host'],
  };
  for (const field of foreign[auth.credential]) {
    if (auth[field] !== undefined) throw new ConfigError(`providers.${name}.auth.${field}: not used by credential ${auth.credential}`);
  }
}
