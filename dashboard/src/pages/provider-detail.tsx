import { useState } from 'preact/hooks';
import { api, ApiError } from '../api/client.js';
import { asApiError, keyPath, patchProvider, providerPath, type ProviderKeyView, type ProviderView } from '../api/config-api.js';
import { useApi } from '../api/use-api.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField, numberField } from '../components/form-field.js';
import { isGeneral, scopedError } from '../components/scoped-error.js';
import { SourceBadge } from '../components/source-badge.js';
import { Empty, Loading } from '../components/states.js';
import { href, navigate } from '../router.js';
import { AuthMethodField, authLabel, ENTRA_TYPES, EntraFields, entraAuthChanged, entraAuthFromForm, entraAuthOf, entraScopedError, fileSecretProblem, isCredential, type EntraCredential } from './entra-auth.js';
import { ProviderTest } from './provider-test.js';
import './config-pages.css';

/** One provider: change its type and base URL, its keys (add, weight, delete), test it, delete it. */
export function ProviderDetailPage({ name }: { name: string }) {
  const provider = useApi((signal) => api.get<ProviderView>(providerPath(name), {}, signal), [name]);
  const [notice, setNotice] = useState<string | null>(null);
  const [actionError, setActionError] = useState<ApiError | null>(null);

  const deleteProvider = async (): Promise<void> => {
    setActionError(null);
    setNotice(null);
    try {
      const remaining = await api.delete<ProviderView | undefined>(providerPath(name));
      if (!remaining) return navigate('/providers');
      setNotice(`What the API set for ${name} is removed; the ${remaining.source === 'file' ? 'config file' : remaining.source === 'env' ? 'environment' : 'built-in'} definition applies again.`);
    } catch (err) {
      setActionError(asApiError(err));
    }
    provider.reload();
  };

  // The data of the provider opened before stays while this one loads: never shown (or saved) under this one's name.
  const view = provider.data?.name === name ? provider.data : undefined;
  return (
    <section aria-labelledby="provider-title">
      <p>
        <a href={href('/providers')}>← All providers</a>
      </p>
      <div class="page-head">
        <h1 id="provider-title">Provider {name}</h1>
        {view ? <SourceBadge source={view.source} /> : null}
      </div>
      <ErrorNotice error={provider.error ?? actionError} />
      {notice ? (
        <div class="notice notice-success" role="status">
          {notice}
        </div>
      ) : null}
      {view ? (
        <>
          {/* Keyed by the provider: opening another one from this page starts its form afresh, not with this one's fields. */}
          <EditProviderForm key={view.name} provider={view} onSaved={() => provider.reload()} />
          <KeysSection provider={view} onChange={() => provider.reload()} />
          <ProviderTest provider={view.name} models={view.models} />
          <div class="panel">
            <h2>Delete</h2>
            <p class="muted">
              Removes what the API set for this provider. A provider from the config file, the environment or built into tollgate stays (the
              API answers why).
            </p>
            <ConfirmButton label="Delete provider" title={`Delete the provider “${name}”?`} confirmLabel="Delete provider" onConfirm={() => void deleteProvider()}>
              <p>Requests for {name}/… and routes naming it fail from then on. This cannot be undone.</p>
            </ConfirmButton>
          </div>
        </>
      ) : provider.loading ? (
        <Loading what="the provider" />
      ) : null}
    </section>
  );
}

const EDIT_FIELDS = ['type', 'base_url', 'auth'];

function EditProviderForm({ provider, onSaved }: { provider: ProviderView; onSaved(): void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  const current = entraAuthOf(provider);
  const [type, setType] = useState(provider.type);
  const [credential, setCredential] = useState<EntraCredential | ''>(current?.credential && isCredential(current.credential) ? current.credential : '');
  const entraType = ENTRA_TYPES.includes(type.trim()) || current !== null;
  const entra = entraType && credential ? credential : null;
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const type = String(form.get('type') ?? '').trim();
    const baseUrl = String(form.get('base_url') ?? '').trim();
    // `auth` is written only when it changes: a save of the URL must not copy the file's identity into the API layer.
    const auth = entra ? entraAuthFromForm(form, entra, current, true) : null;
    const authChange = auth ? (entraAuthChanged(auth, current) ? { auth } : {}) : current ? { auth: null } : {};
    const refused = authChange.auth ? fileSecretProblem(authChange.auth) : null;
    if (refused) return setError(refused);
    // Only the fields changed: the rest (timeouts, headers, keys) stays the file's, the defaults' or the API's as it was.
    const changed = { ...(type !== provider.type ? { type } : {}), ...(baseUrl !== provider.base_url ? { base_url: baseUrl } : {}), ...authChange };
    setBusy(true);
    setError(null);
    setSaved(false);
    try {
      if (Object.keys(changed).length > 0) await patchProvider(provider.name, changed);
      // Removing what the API set leaves the config file's identity in place: say so rather than "Saved".
      if (authChange.auth === null && entraAuthOf(await api.get<ProviderView>(providerPath(provider.name))) !== null) {
        setError(new ApiError(409, 'The Entra identity is the config file’s: remove its auth there to use API keys.', 'auth.credential'));
        onSaved();
        return;
      }
      setSaved(true);
      onSaved();
    } catch (err) {
      setError(entraScopedError(scopedError(asApiError(err), `providers.${provider.name}`)));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="panel" noValidate onSubmit={(event) => void submit(event)} aria-labelledby="edit-provider-title">
      <h2 id="edit-provider-title">Connection</h2>
      {isGeneral(error, EDIT_FIELDS) ? <ErrorNotice error={error} /> : null}
      <div class="form-grid">
        <FormField name="type" label="Type" scope="edit-provider" error={error}>
          {(aria) => <input {...aria} name="type" defaultValue={provider.type} autoComplete="off" onInput={(event) => setType((event.target as HTMLInputElement).value)} />}
        </FormField>
        <FormField name="base_url" label="Base URL" scope="edit-provider" error={error} hint="the completed URL requests go to">
          {(aria) => <input {...aria} name="base_url" type="url" defaultValue={provider.base_url} autoComplete="off" />}
        </FormField>
        {entraType ? <AuthMethodField value={credential} onChange={setCredential} scope="edit-provider" error={error} keysLabel="API keys (below)" /> : null}
        {entra ? <EntraFields credential={entra} current={current} scope="edit-provider" error={error} /> : null}
      </div>
      <button type="submit" disabled={busy}>
        {busy ? 'Saving…' : 'Save connection'}
      </button>
      <span role="status" aria-live="polite" class="muted">
        {saved ? ' Saved: the next request uses it.' : ''}
      </span>
    </form>
  );
}

function KeysSection({ provider, onChange }: { provider: ProviderView; onChange(): void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const act = async (change: () => Promise<unknown>): Promise<void> => {
    setError(null);
    try {
      await change();
    } catch (err) {
      setError(asApiError(err));
    }
    onChange();
  };
  return (
    <div class="panel provider-keys" aria-labelledby="provider-keys-title" role="region">
      <h2 id="provider-keys-title">Keys</h2>
      <p class="muted">
        Requests are spread over the keys by weight. A disabled key is kept (and shown) but serves nothing until it is enabled again.
      </p>
      <ErrorNotice error={error} />
      {provider.keys.length ? (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Keys of {provider.name}</caption>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Id</th>
                <th scope="col">Weight</th>
                <th scope="col">Models</th>
                <th scope="col">Source</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {provider.keys.map((key) => (
                <tr key={key.id} data-key-id={key.id}>
                  <th scope="row">
                    <code>{key.value}</code> {key.disabled ? <span class="badge status-4xx">disabled</span> : null}
                  </th>
                  <td>
                    <code>{key.id}</code>
                  </td>
                  <td>
                    <WeightEditor provider={provider.name} keyView={key} onSaved={onChange} />
                  </td>
                  <td>{key.models?.length ? key.models.join(', ') : <span class="muted">all</span>}</td>
                  <td>
                    <SourceBadge source={key.source} />
                  </td>
                  <td class="actions">
                    {key.source === 'api' ? (
                      <button type="button" onClick={() => void act(() => api.patch(keyPath(provider.name, key.id), { disabled: !key.disabled }))}>
                        {key.disabled ? 'Enable' : 'Disable'}
                        <span class="visually-hidden"> the key {key.value}</span>
                      </button>
                    ) : null}
                    <ConfirmButton label="Delete key" title={`Delete the key ${key.value} of ${provider.name}?`} confirmLabel="Delete key" onConfirm={() => void act(() => api.delete(keyPath(provider.name, key.id)))}>
                      <p>Requests stop using it at once. Its secret is not kept anywhere: to use it again, enter it again.</p>
                    </ConfirmButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : authLabel(provider) ? (
        <Empty>No key: the provider authenticates with {authLabel(provider)}, which replaces its keys.</Empty>
      ) : (
        <Empty>No key. Add one below{provider.type === 'ollama' || provider.type === 'vllm' || provider.type === 'lmstudio' ? ' if the server needs one' : ''}.</Empty>
      )}
      {authLabel(provider) ? null : <AddKeyForm provider={provider.name} onAdded={onChange} />}
    </div>
  );
}

function WeightEditor({ provider, keyView, onSaved }: { provider: string; keyView: ProviderKeyView; onSaved(): void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const id = `key-weight-${keyView.id}`;
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const weight = numberField(event.target as HTMLFormElement, 'weight');
      await api.patch(keyPath(provider, keyView.id), { weight });
      onSaved();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="inline-form" noValidate onSubmit={(event) => void submit(event)}>
      <label for={id} class="visually-hidden">
        Weight of {keyView.value}
      </label>
      <input id={id} name="weight" type="number" min="0" step="any" inputMode="decimal" defaultValue={String(keyView.weight)} class="narrow" aria-invalid={error ? true : undefined} aria-describedby={error ? `${id}-error` : undefined} />
      <button type="submit" disabled={busy}>
        Set<span class="visually-hidden"> weight of {keyView.value}</span>
      </button>
      {error ? (
        <span class="field-error" id={`${id}-error`}>
          {error.message}
        </span>
      ) : null}
    </form>
  );
}

const KEY_FIELDS = ['value', 'weight', 'models'];

function AddKeyForm({ provider, onAdded }: { provider: string; onAdded(): void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [added, setAdded] = useState<ProviderKeyView | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const formElement = event.target as HTMLFormElement;
    const form = new FormData(formElement);
    const models = String(form.get('models') ?? '').split(',').map((model) => model.trim()).filter(Boolean);
    setBusy(true);
    setError(null);
    setAdded(null);
    try {
      const body = { value: String(form.get('value') ?? ''), weight: numberField(formElement, 'weight'), models: models.length ? models : undefined };
      setAdded(await api.post<ProviderKeyView>(`${providerPath(provider)}/keys`, body));
      // The secret leaves the page: from now on it is only shown masked.
      formElement.reset();
      onAdded();
    } catch (err) {
      setError(scopedError(asApiError(err), `providers.${provider}.keys`));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form noValidate onSubmit={(event) => void submit(event)} aria-labelledby="add-key-title">
      <h3 id="add-key-title">Add a key</h3>
      {isGeneral(error, KEY_FIELDS) ? <ErrorNotice error={error} /> : null}
      <div class="form-grid">
        <FormField name="value" label="Secret" scope="add-key" error={error} hint="entered once, then shown masked">
          {(aria) => <input {...aria} name="value" type="password" autoComplete="new-password" required />}
        </FormField>
        <FormField name="weight" label="Weight" scope="add-key" error={error} hint="empty: 1">
          {(aria) => <input {...aria} name="weight" type="number" min="0" step="any" inputMode="decimal" />}
        </FormField>
        <FormField name="models" label="Models" scope="add-key" error={error} hint="comma-separated; empty: all">
          {(aria) => <input {...aria} name="models" autoComplete="off" />}
        </FormField>
      </div>
      <button type="submit" disabled={busy}>
        {busy ? 'Adding…' : 'Add key'}
      </button>
      <span role="status" aria-live="polite" class="muted">
        {added ? ` Key ${added.value} added.` : ''}
      </span>
    </form>
  );
}
