import { ApiError } from '../api/client.js';
import type { ProviderView } from '../api/config-api.js';
import { FormField } from '../components/form-field.js';

/**
 * Microsoft Entra ID for `azure` and `azure-ai` providers (README "Microsoft Entra ID (Azure)"): how the Providers
 * pages name it, the form fields of each credential, and the `auth` object the forms write. The client secret is
 * only ever shown masked by the API; it is written like an API key: typed once, and an empty field keeps it.
 */

export type EntraCredential = 'client_secret' | 'client_certificate' | 'workload_identity' | 'managed_identity';
type EntraField = 'tenant_id' | 'client_id' | 'resource_id' | 'object_id' | 'client_secret' | 'certificate_file' | 'federated_token_file' | 'authority_host' | 'scope';

/** The provider types that take an Entra identity. */
export const ENTRA_TYPES = ['azure', 'azure-ai'];

const CREDENTIALS: Record<EntraCredential, string> = {
  client_secret: 'client secret',
  client_certificate: 'client certificate',
  workload_identity: 'workload identity',
  managed_identity: 'managed identity',
};

/** The fields each credential reads; the others are refused by the API, so they are not shown (and are removed). */
const FIELDS_OF: Record<EntraCredential, EntraField[]> = {
  client_secret: ['tenant_id', 'client_id', 'client_secret', 'authority_host', 'scope'],
  client_certificate: ['tenant_id', 'client_id', 'certificate_file', 'authority_host', 'scope'],
  workload_identity: ['tenant_id', 'client_id', 'federated_token_file', 'authority_host', 'scope'],
  // A user-assigned identity is named one way: by client id, resource id or object id (the API refuses two).
  managed_identity: ['client_id', 'resource_id', 'object_id', 'scope'],
};
const ALL_FIELDS: EntraField[] = ['tenant_id', 'client_id', 'resource_id', 'object_id', 'client_secret', 'certificate_file', 'federated_token_file', 'authority_host', 'scope'];

const LABELS: Record<EntraField, { label: string; hint: string }> = {
  tenant_id: { label: 'Tenant id', hint: 'directory (tenant) id or domain; empty: AZURE_TENANT_ID' },
  client_id: { label: 'Client id', hint: 'application (client) id; empty: AZURE_CLIENT_ID' },
  resource_id: { label: 'Resource id', hint: 'a user-assigned identity by its resource id (/subscriptions/…/userAssignedIdentities/<name>), instead of its client id' },
  object_id: { label: 'Object id', hint: 'a user-assigned identity by its object (principal) id, instead of its client id' },
  client_secret: { label: 'Client secret', hint: 'entered once, then shown masked; empty: AZURE_CLIENT_SECRET' },
  certificate_file: { label: 'Certificate file', hint: 'a PEM file with the RSA key and its certificate; a path is taken from the config file only: empty here, AZURE_CLIENT_CERTIFICATE_PATH' },
  federated_token_file: { label: 'Federated token file', hint: 'a path is taken from the config file only: empty here, AZURE_FEDERATED_TOKEN_FILE' },
  authority_host: { label: 'Authority host', hint: 'a sovereign cloud’s; empty: the endpoint’s cloud (login.microsoftonline.us for .azure.us), else login.microsoftonline.com' },
  scope: { label: 'Scope', hint: 'empty: the cloud’s, https://cognitiveservices.azure.com/.default (.azure.us or .azure.cn for a Government or China endpoint)' },
};

export type EntraAuthView = Partial<Record<EntraField, string>> & { type?: string; credential?: string };

export function entraAuthOf(provider: ProviderView): EntraAuthView | null {
  const auth = provider.auth as EntraAuthView | undefined;
  return auth && auth.type === 'entra' ? auth : null;
}

/** "Entra ID (client secret)": what a provider authenticates with when it is not keys. Never the secret. */
export function authLabel(provider: ProviderView): string | null {
  const auth = entraAuthOf(provider);
  if (!auth) return null;
  return `Entra ID (${CREDENTIALS[auth.credential as EntraCredential] ?? auth.credential ?? 'unknown'})`;
}

export function isCredential(value: string): value is EntraCredential {
  return value in CREDENTIALS;
}

/** The API names a refused `auth` as a whole (`auth`): shown under the credential's select. */
export function entraScopedError(error: ApiError | null): ApiError | null {
  return error?.param === 'auth' ? new ApiError(error.status, error.message, 'auth.credential', error.code) : error;
}

/**
 * The `auth` the form holds. For a merge patch (`patch`), the fields left empty or not used by the credential are
 * null (removed); for a PUT they are left out. An empty secret field keeps the stored secret: its masked value is
 * sent back, which the API swaps for the secret it stands for (the API layer's or the file's), never stores.
 */
export function entraAuthFromForm(form: FormData, credential: EntraCredential, current: EntraAuthView | null, patch: boolean): Record<string, string | null> {
  const auth: Record<string, string | null> = { type: 'entra', credential };
  for (const field of ALL_FIELDS) {
    const used = FIELDS_OF[credential].includes(field);
    let value = used ? String(form.get(`auth.${field}`) ?? '').trim() : '';
    if (field === 'client_secret' && used && value === '' && current?.credential === 'client_secret' && current.client_secret !== undefined) value = current.client_secret;
    if (value) auth[field] = value;
    else if (patch) auth[field] = null;
  }
  return auth;
}

/**
 * The message for a changed identity whose secret field was left empty while the stored secret is the config file's
 * reference (`env:NAME`, shown as written): the API takes no references, and given back it would leave the whole
 * identity to the file, so the change would be dropped without a word.
 */
export function fileSecretProblem(next: Record<string, string | null>): ApiError | null {
  const secret = next.client_secret;
  if (typeof secret !== 'string' || !/^(env|file):/.test(secret)) return null;
  return new ApiError(400, `The client secret is the config file's ${secret}, which the API cannot take: enter the secret itself, or change this identity in the file.`, 'auth.client_secret');
}

/** True when the form's `auth` differs from the provider's (so a save of other fields does not copy the file's `auth`). */
export function entraAuthChanged(next: Record<string, string | null>, current: EntraAuthView | null): boolean {
  if (!current) return true;
  return ['credential', ...ALL_FIELDS].some((field) => (next[field] ?? undefined) !== current[field as EntraField | 'credential']);
}

/**
 * The credential's fields; `current` fills them, also when another credential is chosen (a client id stays one).
 * The secret is never filled: its masked value is in the hint.
 */
export function EntraFields({ credential, current, scope, error }: { credential: EntraCredential; current: EntraAuthView | null; scope: string; error: ApiError | null }) {
  return (
    <>
      {FIELDS_OF[credential].map((field) => {
        const stored = field === 'client_secret' && current?.credential === credential ? current.client_secret : undefined;
        const hint = stored !== undefined ? `stored: ${stored}; empty keeps it` : LABELS[field].hint;
        return (
          <FormField key={`${credential}-${field}`} name={`auth.${field}`} label={LABELS[field].label} scope={scope} error={error} hint={hint}>
            {(aria) =>
              field === 'client_secret' ? (
                <input {...aria} name="auth.client_secret" type="password" autoComplete="new-password" />
              ) : (
                <input {...aria} name={`auth.${field}`} inputMode={field === 'authority_host' ? 'url' : undefined} defaultValue={current?.[field] ?? ''} autoComplete="off" />
              )
            }
          </FormField>
        );
      })}
    </>
  );
}

/** The select of how the provider authenticates: its keys, or one of the Entra credentials. */
export function AuthMethodField({ value, onChange, scope, error, keysLabel }: { value: EntraCredential | ''; onChange(value: EntraCredential | ''): void; scope: string; error: ApiError | null; keysLabel: string }) {
  return (
    <FormField name="auth.credential" label="Authentication" scope={scope} error={error} hint="Entra ID replaces the provider’s API keys">
      {(aria) => (
        <select
          {...aria}
          name="auth.credential"
          value={value}
          onChange={(event) => {
            const chosen = (event.target as HTMLSelectElement).value;
            onChange(isCredential(chosen) ? chosen : '');
          }}
        >
          <option value="">{keysLabel}</option>
          {(Object.keys(CREDENTIALS) as EntraCredential[]).map((credential) => (
            <option key={credential} value={credential}>
              Entra ID ({CREDENTIALS[credential]})
            </option>
          ))}
        </select>
      )}
    </FormField>
  );
}
