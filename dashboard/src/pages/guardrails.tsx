import { useState } from 'preact/hooks';
import type { ApiError } from '../api/client.js';
import { asApiError } from '../api/config-api.js';
import {
  GUARDRAIL_KINDS,
  OUTPUT_BLOCKS,
  loadGuardrails,
  revertGuardrails,
  ruleError,
  ruleOptions,
  ruleSide,
  saveGuardrails,
  type GuardrailRule,
  type GuardrailsConfigView,
  type GuardrailsSection,
  type GuardrailsSource,
} from '../api/guardrails-api.js';
import { useApi } from '../api/use-api.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField, optionalNumber } from '../components/form-field.js';
import { isGeneral, scopedError } from '../components/scoped-error.js';
import { SourceBadge } from '../components/source-badge.js';
import { Empty, Loading } from '../components/states.js';
import { GuardrailRuleForm } from './guardrail-form.js';
import './config-pages.css';
import './guardrails.css';

type Editing = { rule: GuardrailRule | null } | null;

/**
 * Guardrails: the rules every request is checked with (add, edit, delete; each save one `PATCH /api/config` with
 * the whole section), what a blocked answer becomes and the stream look-behind, where the section comes from (the
 * config file or the API), and the routes that add or skip rules. Keys and teams change theirs on the keys page.
 */
export function GuardrailsPage() {
  const loaded = useApi((signal) => loadGuardrails(signal), []);
  const [editing, setEditing] = useState<Editing>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [actionError, setActionError] = useState<ApiError | null>(null);
  const section: GuardrailsSection = loaded.data?.view.guardrails ?? {};
  const rules = section.rules ?? [];
  const source = loaded.data?.source;

  /** Writes the section with `rules` in place of the current list; an error is left to the caller's form. */
  const saveRules = async (next: GuardrailRule[]): Promise<void> => {
    await saveGuardrails({ ...section, rules: next });
    loaded.reload();
  };

  const remove = async (rule: GuardrailRule): Promise<void> => {
    setActionError(null);
    setNotice(null);
    try {
      await saveRules(rules.filter((item) => item.name !== rule.name));
      setNotice(`Rule ${rule.name} deleted: requests are no longer checked with it.`);
    } catch (err) {
      setActionError(asApiError(err));
    }
  };
  const revert = async (): Promise<void> => {
    setActionError(null);
    setNotice(null);
    try {
      await revertGuardrails();
      setNotice("The API's guardrails are deleted: the config file's section (if any) applies again.");
    } catch (err) {
      setActionError(asApiError(err));
    }
    loaded.reload();
  };

  const form = editing ? (
    <GuardrailRuleForm
      key={editing.rule ? `edit:${editing.rule.name}` : 'new'}
      scope={editing.rule ? 'edit-guardrail' : 'new-guardrail'}
      rule={editing.rule}
      existing={rules.map((rule) => rule.name)}
      onCancel={() => setEditing(null)}
      onSave={async (rule) => {
        const index = editing.rule ? rules.findIndex((item) => item.name === editing.rule?.name) : rules.length;
        const next = [...rules];
        next.splice(index, editing.rule ? 1 : 0, rule);
        try {
          await saveRules(next);
        } catch (err) {
          throw ruleError(asApiError(err), 'guardrails.rules', index, rule);
        }
        setEditing(null);
        setActionError(null);
        setNotice(`Rule ${rule.name} saved: it applies to the next request, without a restart.`);
      }}
    />
  ) : null;

  return (
    <section aria-labelledby="guardrails-title" class="guardrails-page">
      <div class="page-head">
        <h1 id="guardrails-title">Guardrails</h1>
        <div class="actions">
          {source ? <GuardrailsSourceBadge source={source} /> : null}
          {source === 'api' ? (
            <ConfirmButton label="Revert to file" title="Revert guardrails to the config file?" confirmLabel="Revert to file" onConfirm={() => void revert()}>
              <p>The rules set through the API or this page are deleted, and the config file's guardrails (if any) apply again.</p>
            </ConfirmButton>
          ) : null}
        </div>
      </div>
      <p class="muted">
        Rules check what a request sends a model and what it answers, streams included: they block it, redact the match, or only flag it. Every
        request runs these rules, then its route's, team's and key's (which add rules and skip these by name). Changes apply at once.
      </p>
      <ErrorNotice error={loaded.error ?? actionError} />
      {notice ? (
        <div class="notice notice-success" role="status">
          {notice}
        </div>
      ) : null}

      <div class="page-head">
        <h2 id="guardrail-rules-title">Rules</h2>
        <button type="button" onClick={() => setEditing({ rule: null })} disabled={editing !== null && !editing.rule}>
          Add a rule
        </button>
      </div>
      {editing && !editing.rule ? form : null}
      {loaded.data ? (
        rules.length ? (
          <GuardrailRulesTable rules={rules} labelledBy="guardrail-rules-title" onEdit={(rule) => setEditing({ rule })} onDelete={(rule) => void remove(rule)} />
        ) : (
          <Empty>No rules: requests and answers pass unchecked. Add one (payment cards, say).</Empty>
        )
      ) : loaded.loading ? (
        <Loading what="guardrails" />
      ) : null}
      {editing?.rule ? form : null}

      {loaded.data ? <OutputSettings key={`${section.output_block}:${section.look_behind_chars}`} section={section} onSaved={(message) => { setNotice(message); loaded.reload(); }} /> : null}
      {loaded.data ? <RouteOverrides view={loaded.data.view} /> : null}
    </section>
  );
}

function GuardrailsSourceBadge({ source }: { source: GuardrailsSource }) {
  const text = source === 'api' ? 'from the API' : source === 'file' ? 'from the config file' : 'none configured';
  return (
    <span
      class={`badge source-${source}`}
      data-testid="guardrails-source"
      title={source === 'api' ? 'Set through the API or this page: "Revert to file" goes back to the file' : source === 'file' ? "The config file's guardrails section: a change here replaces it as a whole" : 'Neither the file nor the API sets guardrails'}
    >
      Rules {text}
    </span>
  );
}

/** The rules of a list, with their options in words; `onEdit`/`onDelete` left out for a read-only list. */
export function GuardrailRulesTable({ rules, labelledBy, onEdit, onDelete, caption }: { rules: GuardrailRule[]; labelledBy: string; onEdit?(rule: GuardrailRule): void; onDelete?(rule: GuardrailRule): void; caption?: string }) {
  return (
    <div class="table-wrap" role="region" aria-labelledby={labelledBy}>
      <table>
        <caption class="visually-hidden">{caption ?? 'Guardrail rules'}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Kind</th>
            <th scope="col">Action</th>
            <th scope="col">Applies to</th>
            <th scope="col">Options</th>
            <th scope="col">Status</th>
            {onEdit || onDelete ? <th scope="col">Actions</th> : null}
          </tr>
        </thead>
        <tbody>
          {rules.map((rule) => (
            <tr key={rule.name} data-rule={rule.name}>
              <th scope="row">{rule.name}</th>
              <td>{GUARDRAIL_KINDS[rule.kind]?.label ?? rule.kind}</td>
              <td data-col="action">
                <span class={`badge action-${rule.action}`}>{rule.action}</span>
              </td>
              <td>{ruleSide(rule)}</td>
              <td class="wrap" data-col="options">
                {ruleOptions(rule) || <span class="muted">—</span>}
              </td>
              <td data-col="status">{rule.disabled ? <span class="badge status-4xx">disabled</span> : 'on'}</td>
              {onEdit || onDelete ? (
                <td class="actions">
                  {onEdit ? (
                    <button type="button" onClick={() => onEdit(rule)}>
                      Edit<span class="visually-hidden"> rule {rule.name}</span>
                    </button>
                  ) : null}
                  {onDelete ? (
                    <ConfirmButton label="Delete" title={`Delete the rule “${rule.name}”?`} confirmLabel="Delete rule" onConfirm={() => onDelete(rule)}>
                      <p>Requests are no longer checked with it, from the next one on.</p>
                    </ConfirmButton>
                  ) : null}
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** What a blocked answer becomes, and how much of a stream is held back: saved with the rules, as one section. */
function OutputSettings({ section, onSaved }: { section: GuardrailsSection; onSaved(message: string): void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    setError(null);
    setBusy(true);
    try {
      await saveGuardrails({ ...section, output_block: String(form.get('output_block') ?? '') || undefined, look_behind_chars: optionalNumber(form.get('look_behind_chars')) });
      onSaved('Guardrail settings saved: they apply at once.');
    } catch (err) {
      setError(scopedError(asApiError(err), 'guardrails'));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="panel guardrail-form" noValidate onSubmit={(event) => void submit(event)} aria-labelledby="guardrail-settings-title">
      <h2 id="guardrail-settings-title">Blocked answers and streams</h2>
      {isGeneral(error, ['output_block', 'look_behind_chars']) ? <ErrorNotice error={error} /> : null}
      <div class="form-grid">
        <FormField name="output_block" label="A blocked answer" scope="guardrail-settings" error={error} hint="content_filter: withheld, finish_reason content_filter; error: fails with 400 guardrail_blocked">
          {(aria) => (
            <select {...aria} name="output_block">
              {OUTPUT_BLOCKS.map((value) => (
                <option key={value} value={value} selected={(section.output_block ?? 'content_filter') === value}>
                  {value === 'content_filter' ? 'ends with content_filter' : 'fails with an error'}
                </option>
              ))}
            </select>
          )}
        </FormField>
        <FormField name="look_behind_chars" label="Stream look-behind (characters)" scope="guardrail-settings" error={error} hint="held back so a match split across chunks is seen whole; empty: what the rules need, at most 256">
          {(aria) => <input {...aria} name="look_behind_chars" type="number" min="16" max="16384" step="1" inputMode="numeric" defaultValue={section.look_behind_chars === undefined ? '' : String(section.look_behind_chars)} />}
        </FormField>
      </div>
      <button type="submit" disabled={busy}>
        {busy ? 'Saving…' : 'Save settings'}
      </button>
    </form>
  );
}

/** The routes that add or skip rules, from the effective config (changed on the routes' own config). */
function RouteOverrides({ view }: { view: GuardrailsConfigView }) {
  const routes = view.routes.filter((route) => route.guardrails);
  return (
    <>
      <h2 id="guardrail-routes-title">Routes that change the rules</h2>
      <p class="muted">
        Read only: a route's guardrails are set with the route in the config (file, API or the settings page). Keys and teams add and skip rules on
        the <a href="#/keys">Keys & teams</a> page.
      </p>
      {routes.length ? (
        <div class="table-wrap" role="region" aria-labelledby="guardrail-routes-title">
          <table>
            <caption class="visually-hidden">Routes that add or skip guardrail rules</caption>
            <thead>
              <tr>
                <th scope="col">Route</th>
                <th scope="col">Adds</th>
                <th scope="col">Skips</th>
                <th scope="col">A blocked answer</th>
                <th scope="col">Source</th>
              </tr>
            </thead>
            <tbody>
              {routes.map((route) => (
                <tr key={route.name} data-route={route.name}>
                  <th scope="row">{route.name}</th>
                  <td class="wrap">
                    {route.guardrails?.rules?.length
                      ? route.guardrails.rules.map((rule) => `${rule.name} (${GUARDRAIL_KINDS[rule.kind]?.label ?? rule.kind}, ${rule.action})`).join('; ')
                      : <span class="muted">—</span>}
                  </td>
                  <td>{route.guardrails?.skip?.length ? route.guardrails.skip.join(', ') : <span class="muted">—</span>}</td>
                  <td>{route.guardrails?.output_block ?? <span class="muted">as above</span>}</td>
                  <td>
                    <SourceBadge source={route.source} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <Empty>No route adds or skips rules.</Empty>
      )}
    </>
  );
}
