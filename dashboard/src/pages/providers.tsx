import { useState } from 'preact/hooks';
import { api, ApiError } from '../api/client.js';
import { apiPut, asApiError, providerPath, type ProviderView } from '../api/config-api.js';
import type { List } from '../api/types.js';
import { useApi } from '../api/use-api.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField, numberField } from '../components/form-field.js';
import { isGeneral, scopedError } from '../components/scoped-error.js';
import { SourceBadge } from '../components/source-badge.js';
import { Empty, Loading } from '../components/states.js';
import { href, navigate } from '../router.js';
import { AuthMethodField, authLabel, ENTRA_TYPES, EntraFields, entraAuthFromForm, entraScopedError, type EntraCredential } from './entra-auth.js';
import './config-pages.css';

/** Providers and their keys (masked): the list, and a form to add one. One provider's page manages its keys. */
export function ProvidersPage() {
  const providers = useApi((signal) => api.get<List<ProviderView>>('/providers', {}, signal), []);
  const [filter, setFilter] = useState('');
  const list = providers.data?.data ?? [];
  const shown = filter ? list.filter((p) => p.name.includes(filter.trim().toLowerCase()) || p.type.includes(filter.trim().toLowerCase())) : list;
  // Providers with a key (or set up by the operator) first: tollgate knows many vendors that have none here.
  const ordered = [...shown].sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));

  return (
    <section aria-labelledby="providers-title">
      <h1 id="providers-title">Providers</h1>
      <p class="muted">
        Keys are entered once and then only shown masked. Providers from the config file, the environment or built into tollgate can be
        overridden here, not deleted.
      </p>
      <ErrorNotice error={providers.error} />
      <div class="filters">
        <label>
          Filter
          <input type="search" value={filter} onInput={(event) => setFilter((event.target as HTMLInputElement).value)} placeholder="name or type" />
        </label>
      </div>
      {providers.data ? (
        ordered.length ? (
          <div class="table-wrap">
            <table>
              <caption class="visually-hidden">Providers</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Base URL</th>
                  <th scope="col">Credentials</th>
                  <th scope="col">Source</th>
                </tr>
              </thead>
              <tbody>
                {ordered.map((provider) => (
                  <tr key={provider.name} data-provider={provider.name}>
                    <th scope="row">
                      <a href={href(`/providers/${encodeURIComponent(provider.name)}`)}>{provider.name}</a>
                    </th>
                    <td>{provider.type}</td>
                    <td>
                      <code>{provider.base_url}</code>
                    </td>
                    <td>
                      {authLabel(provider) ? (
                        <span class="key-chip">{authLabel(provider)}</span>
                      ) : provider.keys.length ? (
                        provider.keys.map((key) => (
                          <span key={key.id} class="key-chip">
                            <code>{key.value}</code>
                            {provider.keys.length > 1 ? <span class="muted"> ×{key.weight}</span> : null}{' '}
                          </span>
                        ))
                      ) : (
                        <span class="muted">no key</span>
                      )}
                    </td>
                    <td>
                      <SourceBadge source={provider.source} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <Empty>{filter ? 'No provider matches the filter.' : 'No providers.'}</Empty>
        )
      ) : providers.loading ? (
        <Loading what="providers" />
      ) : null}
      <AddProviderForm existing={list.map((p) => p.name)} onAdded={(name) => navigate(`/providers/${encodeURIComponent(name)}`)} />
    </section>
  );
}

function rank(provider: ProviderView): number {
  if (provider.source === 'api') return 0;
  if (provider.keys.length || authLabel(provider)) return 1;
  if (provider.source !== 'builtin') return 2;
  return 3;
}

const TYPES = ['openai', 'anthropic', 'gemini', 'vertex', 'bedrock', 'azure', 'azure-ai', 'cohere', 'groq', 'together', 'fireworks', 'deepseek', 'xai', 'mistral', 'openrouter', 'cerebras', 'perplexity', 'deepinfra', 'ollama', 'vllm', 'lmstudio'];
const FIELDS = ['name', 'type', 'base_url', 'keys.0.value', 'keys.0.weight', 'auth'];

function AddProviderForm({ existing, onAdded }: { existing: string[]; onAdded(name: string): void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  // The type decides whether an Entra identity can stand for the keys (an empty type is the name's).
  const [typed, setTyped] = useState({ name: '', type: '' });
  const [credential, setCredential] = useState<EntraCredential | ''>('');
  const entraType = ENTRA_TYPES.includes(typed.type.trim() || typed.name.trim());
  const entra = entraType && credential ? credential : null;
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const formElement = event.target as HTMLFormElement;
    const form = new FormData(formElement);
    const name = String(form.get('name') ?? '').trim();
    if (!name) return setError(new ApiError(400, 'Name the provider: it is the prefix of its models (`<name>/<model>`).', 'name'));
    if (existing.includes(name)) return setError(new ApiError(409, `A provider named '${name}' exists: open it to change it.`, 'name'));
    const secret = String(form.get('key') ?? '');
    setBusy(true);
    setError(null);
    try {
      const body = {
        type: String(form.get('type') ?? '').trim() || undefined,
        base_url: String(form.get('base_url') ?? '').trim() || undefined,
        keys: secret && !entra ? [{ value: secret, weight: numberField(formElement, 'weight') ?? 1 }] : undefined,
        auth: entra ? entraAuthFromForm(form, entra, null, false) : undefined,
      };
      await apiPut(providerPath(name), body);
      formElement.reset();
      setTyped({ name: '', type: '' });
      setCredential('');
      onAdded(name);
    } catch (err) {
      setError(entraScopedError(scopedError(asApiError(err), `providers.${name}`)));
    } finally {
      setBusy(false);
    }
  };
  const onInput = (event: Event): void => {
    const target = event.target as HTMLInputElement;
    if (target.name === 'name' || target.name === 'type') setTyped((now) => ({ ...now, [target.name]: target.value }));
  };
  return (
    <form class="panel" noValidate onSubmit={(event) => void submit(event)} onInput={onInput} aria-labelledby="add-provider-title">
      <h2 id="add-provider-title">Add a provider</h2>
      {isGeneral(error, FIELDS) ? <ErrorNotice error={error} /> : null}
      <div class="form-grid">
        <FormField name="name" label="Name" scope="add-provider" error={error} hint="the model prefix, e.g. lab-a">
          {(aria) => <input {...aria} name="name" required autoComplete="off" pattern="[a-z0-9][a-z0-9_-]*" />}
        </FormField>
        <FormField name="type" label="Type" scope="add-provider" error={error} hint="wire format; empty: the name">
          {(aria) => (
            <>
              <input {...aria} name="type" list="provider-types" autoComplete="off" />
              <datalist id="provider-types">
                {TYPES.map((type) => (
                  <option key={type} value={type} />
                ))}
              </datalist>
            </>
          )}
        </FormField>
        <FormField name="base_url" label="Base URL" scope="add-provider" error={error} hint="empty: the vendor's default">
          {(aria) => <input {...aria} name="base_url" type="url" autoComplete="off" placeholder="https://…" />}
        </FormField>
        {entraType ? <AuthMethodField value={credential} onChange={setCredential} scope="add-provider" error={error} keysLabel="API key" /> : null}
        {entra ? (
          <EntraFields credential={entra} current={null} scope="add-provider" error={error} />
        ) : (
          <>
            <FormField name="keys.0.value" label="API key" scope="add-provider" error={error} hint="optional; shown masked from then on">
              {(aria) => <input {...aria} name="key" type="password" autoComplete="new-password" />}
            </FormField>
            <FormField name="keys.0.weight" label="Key weight" scope="add-provider" error={error} hint="share among this provider's keys">
              {(aria) => <input {...aria} name="weight" type="number" min="0" step="any" inputMode="decimal" placeholder="1" />}
            </FormField>
          </>
        )}
      </div>
      <button type="submit" disabled={busy}>
        {busy ? 'Adding…' : 'Add provider'}
      </button>
    </form>
  );
}
