import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api/client.js';
import type { CreatedKey, KeyPage, List, Team, VirtualKey } from '../api/types.js';
import { useApi } from '../api/use-api.js';
import { BudgetBar } from '../components/budget-bar.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { CopyButton } from '../components/copy-button.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField, numberField } from '../components/form-field.js';
import { Empty, Loading } from '../components/states.js';
import { count, dateTime } from '../format.js';
import { GuardrailsOverrideEditor } from './guardrails-override.js';
import { LimitsEditor } from './limits-editor.js';
import { McpKeyEditor } from './mcp-key-editor.js';
import { TeamsSection } from './teams.js';

const PERIODS = ['total', 'daily', 'weekly', 'monthly'] as const;

/** Keys per page: the server pages them, so the page stays fast with tens of thousands of keys. */
const KEYS_PER_PAGE = 100;

/** Virtual keys and their teams: spend against budget, create or rotate (secret shown once), edit limits, disable, delete. */
export function KeysPage() {
  const [search, setSearch] = useState('');
  /** The `after` cursor of each page before the current one (empty: the first page). */
  const [cursors, setCursors] = useState<string[]>([]);
  const after = cursors.at(-1);
  const keys = useApi((signal) => api.get<KeyPage<VirtualKey>>('/keys', { limit: KEYS_PER_PAGE, after, q: search }, signal), [after, search]);
  const teams = useApi((signal) => api.get<List<Team>>('/teams', {}, signal), []);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const [rotated, setRotated] = useState(false);
  const [actionError, setActionError] = useState<ApiError | null>(null);
  /** The key whose guardrails are being edited. */
  const [guarding, setGuarding] = useState<VirtualKey | null>(null);
  /** The key whose MCP policy is being edited. */
  const [mcpKey, setMcpKey] = useState<VirtualKey | null>(null);
  /** The key whose budget, rate limit and models are being edited. */
  const [limitsKey, setLimitsKey] = useState<VirtualKey | null>(null);
  // A page emptied by deletions (its last key deleted, say) steps back a page: left as it was, it read "No virtual
  // keys yet" or "No key matches", with the keys one Previous click away.
  const emptyLaterPage = !!keys.data && keys.data.data.length === 0 && cursors.length > 0;
  useEffect(() => {
    if (emptyLaterPage) setCursors((seen) => seen.slice(0, -1));
  }, [emptyLaterPage, keys.data]);
  const teamName = (id: string | null): string => (id ? (teams.data?.data.find((team) => team.id === id)?.name ?? id) : '—');

  const act = async (change: () => Promise<unknown>): Promise<void> => {
    setActionError(null);
    try {
      await change();
    } catch (err) {
      setActionError(err instanceof ApiError ? err : new ApiError(0, String(err)));
    }
    keys.reload();
    teams.reload();
  };

  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">Virtual keys</h1>
      {created ? <NewSecret created={created} rotated={rotated} onDone={() => setCreated(null)} /> : null}
      <form class="filters" role="search" onSubmit={(event) => event.preventDefault()}>
        <FormField name="q" label="Find a key" scope="keys-search" error={null} hint="name, id or the first characters of the secret">
          {(aria) => (
            <input
              {...aria}
              type="search"
              value={search}
              onInput={(event) => {
                setSearch((event.target as HTMLInputElement).value);
                setCursors([]);
              }}
            />
          )}
        </FormField>
      </form>
      <ErrorNotice error={keys.error ?? actionError} />
      {keys.data ? (
        keys.data.data.length ? (
          <div class="table-wrap">
            <table>
              <caption class="visually-hidden">Virtual keys</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  <th scope="col">Team</th>
                  <th scope="col">Spend / budget</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Rate limit</th>
                  <th scope="col">Status</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {keys.data.data.map((key) => (
                  <tr key={key.id} data-key-id={key.id}>
                    <th scope="row">{key.name}</th>
                    <td>
                      <code>{key.key_prefix}…</code>
                    </td>
                    <td>{teamName(key.team)}</td>
                    <td>
                      <BudgetBar spend={key.spend} budget={key.budget} period={key.budget_period} />
                    </td>
                    <td>{count(key.requests)}</td>
                    <td>{key.rate_limit ? `${key.rate_limit}/min` : '—'}</td>
                    <td>
                      <KeyStatus disabled={key.disabled} expiresAt={key.expires_at} />
                      {key.guardrails ? (
                        <>
                          {' '}
                          <span class="badge" title="This key adds or skips guardrail rules">
                            guardrails
                          </span>
                        </>
                      ) : null}
                      {key.mcp ? (
                        <>
                          {' '}
                          <span class="badge" title="This key has an MCP policy (allowed tools, attached servers, mode or tool-call limit)">
                            mcp
                          </span>
                        </>
                      ) : null}
                    </td>
                    <td class="actions">
                      <button type="button" onClick={() => setLimitsKey(key)} aria-expanded={limitsKey?.id === key.id}>
                        Limits<span class="visually-hidden"> of {key.name}</span>
                      </button>
                      <button type="button" onClick={() => setGuarding(key)} aria-expanded={guarding?.id === key.id}>
                        Guardrails<span class="visually-hidden"> of {key.name}</span>
                      </button>
                      <button type="button" onClick={() => setMcpKey(key)} aria-expanded={mcpKey?.id === key.id}>
                        MCP<span class="visually-hidden"> of {key.name}</span>
                      </button>
                      <button type="button" onClick={() => void act(() => api.patch(`/keys/${encodeURIComponent(key.id)}`, { disabled: !key.disabled }))}>
                        {key.disabled ? 'Enable' : 'Disable'}
                        <span class="visually-hidden"> {key.name}</span>
                      </button>
                      <ConfirmButton
                        label="Rotate"
                        title={`Rotate the key “${key.name}”?`}
                        confirmLabel="Rotate key"
                        onConfirm={() =>
                          void act(async () => {
                            const fresh = await api.post<CreatedKey>(`/keys/${encodeURIComponent(key.id)}/rotate`, {});
                            setRotated(true);
                            setCreated(fresh);
                          })
                        }
                      >
                        <p>A new secret replaces this one: clients still using the old secret get 401 at once. The new one is shown once.</p>
                      </ConfirmButton>
                      <ConfirmButton label={`Delete`} title={`Delete the key “${key.name}”?`} confirmLabel="Delete key" onConfirm={() => void act(() => api.delete(`/keys/${encodeURIComponent(key.id)}`))}>
                        <p>Clients using it get 401 from then on. Its spend stays in the usage history. This cannot be undone.</p>
                      </ConfirmButton>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <Empty>{search ? `No key matches “${search}”.` : 'No virtual keys yet. Create one below; clients then send it as their API key.'}</Empty>
        )
      ) : keys.loading ? (
        <Loading what="keys" />
      ) : null}

      {limitsKey ? (
        <LimitsEditor
          key={limitsKey.id}
          what="key"
          path={`/keys/${encodeURIComponent(limitsKey.id)}`}
          name={limitsKey.name}
          current={limitsKey}
          teams={teams.data?.data ?? []}
          onSaved={() => {
            keys.reload();
            teams.reload();
          }}
          onClose={() => setLimitsKey(null)}
        />
      ) : null}

      {guarding ? (
        <GuardrailsOverrideEditor
          key={guarding.id}
          what="key"
          path={`/keys/${encodeURIComponent(guarding.id)}`}
          name={guarding.name}
          current={guarding.guardrails}
          onSaved={() => keys.reload()}
          onClose={() => setGuarding(null)}
        />
      ) : null}

      {mcpKey ? (
        <McpKeyEditor
          key={mcpKey.id}
          path={`/keys/${encodeURIComponent(mcpKey.id)}`}
          name={mcpKey.name}
          current={mcpKey.mcp}
          onSaved={() => keys.reload()}
          onClose={() => setMcpKey(null)}
        />
      ) : null}

      {keys.data && (cursors.length > 0 || keys.data.has_more) ? (
        <nav class="pager" aria-label="Key pages">
          <button type="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
            Previous {KEYS_PER_PAGE}
          </button>
          <button type="button" disabled={!keys.data.next_after} onClick={() => keys.data?.next_after && setCursors([...cursors, keys.data.next_after])}>
            Next {KEYS_PER_PAGE}
          </button>
        </nav>
      ) : null}

      <CreateKeyForm teams={teams.data?.data ?? []} onCreated={(key) => { setRotated(false); setCreated(key); keys.reload(); }} />
      <TeamsSection teams={teams} onChange={() => keys.reload()} />
    </section>
  );
}

/**
 * Whether the gateway takes the key now. A key past its `expires_at` is refused (401 key_expired) though nothing
 * else about it changes, so the date alone must not read as if it were still to come.
 */
function KeyStatus({ disabled, expiresAt }: { disabled: boolean; expiresAt: string | null }) {
  if (disabled) return <span class="badge status-4xx">disabled</span>;
  if (!expiresAt) return <>active</>;
  if (Date.parse(expiresAt) <= Date.now()) {
    return (
      <span class="badge status-4xx" title={`expired ${dateTime(expiresAt)}`}>
        expired
      </span>
    );
  }
  return <>expires {dateTime(expiresAt)}</>;
}

function NewSecret({ created, rotated, onDone }: { created: CreatedKey; rotated: boolean; onDone(): void }) {
  const notice = useRef<HTMLDivElement>(null);
  // Focus moves to each new secret once. (An inline ref callback ran again at every render of the page, so each
  // keystroke in the search box or click on a row sent the focus, and the scroll, back up here.)
  useEffect(() => notice.current?.focus(), [created.key]);
  return (
    <div class="notice notice-success" role="status" tabIndex={-1} ref={notice}>
      <h2>
        Key “{created.name}” {rotated ? 'rotated' : 'created'}
      </h2>
      <p>Copy the secret now: it is shown this once and stored only as a hash.</p>
      <p class="secret">
        <code data-testid="new-key-secret">{created.key}</code> <CopyButton text={created.key} label="Copy secret" />
      </p>
      <button type="button" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}

function CreateKeyForm({ teams, onCreated }: { teams: Team[]; onCreated(key: CreatedKey): void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const formElement = event.target as HTMLFormElement;
    const form = new FormData(formElement);
    const models = String(form.get('models') ?? '').split(',').map((model) => model.trim()).filter(Boolean);
    setBusy(true);
    setError(null);
    try {
      const body = {
        name: String(form.get('name') ?? '').trim(),
        team: String(form.get('team') ?? '') || undefined,
        budget: numberField(formElement, 'budget'),
        budget_period: String(form.get('budget_period') ?? 'total'),
        rate_limit: numberField(formElement, 'rate_limit'),
        models: models.length ? models : undefined,
      };
      onCreated(await api.post<CreatedKey>('/keys', body));
      formElement.reset();
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, String(err)));
    } finally {
      setBusy(false);
    }
  };
  // noValidate: the API is the one judge of a key, and its messages show next to the fields they name.
  return (
    <form class="panel" noValidate onSubmit={(event) => void submit(event)} aria-labelledby="create-key-title">
      <h2 id="create-key-title">Create a virtual key</h2>
      {error && !error.param ? <ErrorNotice error={error} /> : null}
      {error?.param && !['name', 'team', 'budget', 'budget_period', 'rate_limit', 'models'].some((field) => error.param?.startsWith(field)) ? <ErrorNotice error={error} /> : null}
      <div class="form-grid">
        <FormField name="name" label="Name" error={error}>
          {(aria) => <input {...aria} name="name" required autoComplete="off" />}
        </FormField>
        <FormField name="team" label="Team" error={error}>
          {(aria) => (
            <select {...aria} name="team">
              <option value="">no team</option>
              {teams.map((team) => (
                <option key={team.id} value={team.id}>
                  {team.name}
                </option>
              ))}
            </select>
          )}
        </FormField>
        <FormField name="budget" label="Budget (USD)" error={error} hint="empty: no budget">
          {(aria) => <input {...aria} name="budget" type="number" min="0" step="any" inputMode="decimal" />}
        </FormField>
        <FormField name="budget_period" label="Budget period" error={error}>
          {(aria) => (
            <select {...aria} name="budget_period">
              {PERIODS.map((period) => (
                <option key={period} value={period}>
                  {period}
                </option>
              ))}
            </select>
          )}
        </FormField>
        <FormField name="rate_limit" label="Requests per minute" error={error} hint="empty: no limit">
          {(aria) => <input {...aria} name="rate_limit" type="number" min="1" step="1" inputMode="numeric" />}
        </FormField>
        <FormField name="models" label="Allowed models" error={error} hint="comma-separated, e.g. openai/*, chat-default; empty: all">
          {(aria) => <input {...aria} name="models" autoComplete="off" />}
        </FormField>
      </div>
      <button type="submit" disabled={busy}>
        {busy ? 'Creating…' : 'Create key'}
      </button>
    </form>
  );
}
