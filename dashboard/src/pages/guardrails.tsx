import { useState } from 'preact/hooks';
import { GUARDRAIL_KINDS, OUTPUT_BLOCKS, loadGuardrails, revertGuardrails, saveGuardrails, type GuardrailsConfigView, type GuardrailsSection } from '../api/guardrails-api.js';
import { useApi } from '../api/use-api.js';
import { ConfigSectionHead } from '../components/config-section-head.js';
import { DataTable, Nothing } from '../components/data-table.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField, numberField } from '../components/form-field.js';
import { isGeneral, scopedError } from '../components/scoped-error.js';
import { SourceBadge } from '../components/source-badge.js';
import { Empty } from '../components/states.js';
import { SuccessNotice, useActions } from '../components/use-actions.js';
import { useFormSave } from '../components/use-form-save.js';
import { GuardrailRuleList, type RuleEditing } from './guardrail-rule-list.js';
import './config-pages.css';

/**
 * Guardrails: the rules every request is checked with (add, edit, delete; each save one `PATCH /api/config` with
 * the whole section), what a blocked answer becomes and the stream look-behind, where the section comes from (the
 * config file or the API), and the routes that add or skip rules. Keys and teams change theirs on the keys page.
 */
export function GuardrailsPage() {
  const loaded = useApi((signal) => loadGuardrails(signal), []);
  const [editing, setEditing] = useState<RuleEditing>(null);
  const { notice, setNotice, actionError, setActionError, act } = useActions(loaded.reload);
  const section: GuardrailsSection = loaded.data?.view.guardrails ?? {};
  const rules = section.rules ?? [];
  const source = loaded.data?.source;

  return (
    <section aria-labelledby="guardrails-title" class="guardrails-page">
      <ConfigSectionHead
        id="guardrails-title"
        title="Guardrails"
        source={source}
        badge={{ noun: 'Rules', testId: 'guardrails-source', file: "The config file's guardrails section: a change here replaces it as a whole", none: 'Neither the file nor the API sets guardrails' }}
        revertTitle="Revert guardrails to the config file?"
        onRevert={() => void act(() => revertGuardrails(), "The API's guardrails are deleted: the config file's section (if any) applies again.")}
      >
        <p>The rules set through the API or this page are deleted, and the config file's guardrails (if any) apply again.</p>
      </ConfigSectionHead>
      <p class="muted">
        Rules check what a request sends a model and what it answers, streams included: they block it, redact the match, or only flag it. Every
        request runs these rules, then its route's, team's and key's (which add rules and skip these by name). Changes apply at once.
      </p>
      <ErrorNotice error={loaded.error ?? actionError} />
      <SuccessNotice notice={notice} />

      <GuardrailRuleList
        rules={rules}
        editing={editing}
        setEditing={setEditing}
        heading={<h2 id="guardrail-rules-title">Rules</h2>}
        addLabel="Add a rule"
        formScope={(rule) => (rule ? 'edit-guardrail' : 'new-guardrail')}
        labelledBy="guardrail-rules-title"
        ready={!!loaded.data}
        loading={loaded.loading}
        empty="No rules: requests and answers pass unchecked. Add one (payment cards, say)."
        write={async (next) => {
          await saveGuardrails({ ...section, rules: next });
          loaded.reload();
        }}
        onSaved={(rule) => {
          setActionError(null);
          setNotice(`Rule ${rule.name} saved: it applies to the next request, without a restart.`);
        }}
        onDelete={(rule) => void act(() => saveGuardrails({ ...section, rules: rules.filter((item) => item.name !== rule.name) }), `Rule ${rule.name} deleted: requests are no longer checked with it.`)}
      />

      {loaded.data ? <OutputSettings key={`${section.output_block}:${section.look_behind_chars}`} section={section} onSaved={(message) => { setNotice(message); loaded.reload(); }} /> : null}
      {loaded.data ? <RouteOverrides view={loaded.data.view} /> : null}
    </section>
  );
}

/** What a blocked answer becomes, and how much of a stream is held back: saved with the rules, as one section. */
function OutputSettings({ section, onSaved }: { section: GuardrailsSection; onSaved(message: string): void }) {
  const { error, busy, save } = useFormSave();
  const submit = (event: Event) => {
    event.preventDefault();
    const formElement = event.target as HTMLFormElement;
    const form = new FormData(formElement);
    return save(
      () => ({ ...section, output_block: String(form.get('output_block') ?? '') || undefined, look_behind_chars: numberField(formElement, 'look_behind_chars') }),
      async (body) => {
        await saveGuardrails(body);
        onSaved('Guardrail settings saved: they apply at once.');
      },
      (err) => scopedError(err, 'guardrails'),
    );
  };
  return (
    <form class="panel config-form guardrail-form" noValidate onSubmit={(event) => void submit(event)} aria-labelledby="guardrail-settings-title">
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
        <DataTable labelledBy="guardrail-routes-title" caption="Routes that add or skip guardrail rules" columns={['Route', 'Adds', 'Skips', 'A blocked answer', 'Source']}>
          {routes.map((route) => (
            <tr key={route.name} data-route={route.name}>
              <th scope="row">{route.name}</th>
              <td class="wrap">
                {route.guardrails?.rules?.length
                  ? route.guardrails.rules.map((rule) => `${rule.name} (${GUARDRAIL_KINDS[rule.kind]?.label ?? rule.kind}, ${rule.action})`).join('; ')
                  : <Nothing />}
              </td>
              <td>{route.guardrails?.skip?.length ? route.guardrails.skip.join(', ') : <Nothing />}</td>
              <td>{route.guardrails?.output_block ?? <Nothing>as above</Nothing>}</td>
              <td>
                <SourceBadge source={route.source} />
              </td>
            </tr>
          ))}
        </DataTable>
      ) : (
        <Empty>No route adds or skips rules.</Empty>
      )}
    </>
  );
}
