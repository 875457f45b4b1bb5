import { useState } from 'preact/hooks';
import { api, type ApiError } from '../api/client.js';
import { asApiError } from '../api/config-api.js';
import { OUTPUT_BLOCKS, loadGuardrails, overrideBody, ruleError, type GuardrailRule, type GuardrailsOverride } from '../api/guardrails-api.js';
import { useApi } from '../api/use-api.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField } from '../components/form-field.js';
import { isGeneral, scopedError } from '../components/scoped-error.js';
import { useFocusOnOpen } from '../components/spec-field.js';
import { Empty } from '../components/states.js';
import { GuardrailRuleForm } from './guardrail-form.js';
import { GuardrailRulesTable } from './guardrails.js';
import './guardrails.css';

/**
 * A virtual key's or a team's guardrails (`PATCH /api/keys/:id` or `/api/teams/:id` with `{guardrails}`): the
 * global rules it skips (ticked by name), what a blocked answer becomes for it, and rules of its own, added and
 * edited with the same form as the global ones. Each save writes the whole override (null when it changes nothing).
 */
export function GuardrailsOverrideEditor({
  what,
  path,
  name,
  current,
  onSaved,
  onClose,
}: {
  what: 'key' | 'team';
  /** `/keys/<id>` or `/teams/<id>`. */
  path: string;
  name: string;
  current: GuardrailsOverride | null | undefined;
  onSaved(): void;
  onClose(): void;
}) {
  const global = useApi((signal) => loadGuardrails(signal), []);
  const [override, setOverride] = useState<GuardrailsOverride>(current ?? {});
  const [editing, setEditing] = useState<{ rule: GuardrailRule | null } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const heading = useFocusOnOpen();
  const scope = `${what}-guardrails`;
  const rules = override.rules ?? [];
  const globalNames = (global.data?.view.guardrails?.rules ?? []).map((rule) => rule.name);
  // A skip of a name not among the global rules (a route's rule, or one since deleted) stays listed, so saving keeps it.
  const skippable = [...globalNames, ...(override.skip ?? []).filter((skip) => !globalNames.includes(skip))];

  const save = async (next: GuardrailsOverride): Promise<void> => {
    const saved = await api.patch<{ guardrails: GuardrailsOverride | null }>(path, { guardrails: overrideBody(next) });
    setOverride(saved.guardrails ?? {});
    onSaved();
  };

  const submitSettings = async (event: Event): Promise<void> => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    setError(null);
    setNotice(null);
    try {
      await save({ ...override, skip: form.getAll('skip').map(String), output_block: String(form.get('output_block') ?? '') || undefined });
      setNotice(`Saved: the ${what}'s next request runs with it.`);
    } catch (err) {
      setError(scopedError(asApiError(err), 'guardrails'));
    }
  };

  const removeRule = async (rule: GuardrailRule): Promise<void> => {
    setError(null);
    setNotice(null);
    try {
      await save({ ...override, rules: rules.filter((item) => item.name !== rule.name) });
      setNotice(`Rule ${rule.name} removed from this ${what}.`);
    } catch (err) {
      setError(asApiError(err));
    }
  };

  const form = editing ? (
    <GuardrailRuleForm
      key={editing.rule ? `edit:${editing.rule.name}` : 'new'}
      scope={`${scope}-rule`}
      rule={editing.rule}
      existing={rules.map((rule) => rule.name)}
      onCancel={() => setEditing(null)}
      onSave={async (rule) => {
        const index = editing.rule ? rules.findIndex((item) => item.name === editing.rule?.name) : rules.length;
        const next = [...rules];
        next.splice(index, editing.rule ? 1 : 0, rule);
        try {
          await save({ ...override, rules: next });
        } catch (err) {
          throw ruleError(asApiError(err), 'guardrails.rules', index, rule);
        }
        setEditing(null);
        setNotice(`Rule ${rule.name} saved for this ${what}.`);
      }}
    />
  ) : null;

  return (
    <section class="panel guardrails-editor" aria-labelledby={`${scope}-title`} onKeyDown={(event) => event.key === 'Escape' && !editing && onClose()}>
      <div class="page-head">
        <h3 id={`${scope}-title`} tabIndex={-1} ref={heading}>
          Guardrails of the {what} “{name}”
        </h3>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      <p class="muted">
        Its requests run the global rules (on the <a href="#/guardrails">Guardrails</a> page) minus those skipped here, then its own.
      </p>
      <ErrorNotice error={global.error} />
      {notice ? (
        <div class="notice notice-success" role="status">
          {notice}
        </div>
      ) : null}

      <form noValidate onSubmit={(event) => void submitSettings(event)} aria-label={`Skipped rules of ${name}`}>
        {isGeneral(error, ['skip', 'output_block']) ? <ErrorNotice error={error} /> : null}
        <div class="form-grid">
          <fieldset class="field checks">
            <legend>Skip global rules</legend>
            {skippable.length ? (
              skippable.map((skip) => (
                <label key={skip}>
                  <input type="checkbox" name="skip" value={skip} defaultChecked={override.skip?.includes(skip)} /> {skip}
                  {globalNames.includes(skip) ? null : <span class="muted"> (not a global rule)</span>}
                </label>
              ))
            ) : (
              <span class="muted">{global.loading ? 'Loading the global rules…' : 'No global rules.'}</span>
            )}
          </fieldset>
          <FormField name="output_block" label="A blocked answer" scope={scope} error={error}>
            {(aria) => (
              <select {...aria} name="output_block">
                <option value="">as the global setting</option>
                {OUTPUT_BLOCKS.map((value) => (
                  <option key={value} value={value} selected={override.output_block === value}>
                    {value === 'content_filter' ? 'ends with content_filter' : 'fails with an error'}
                  </option>
                ))}
              </select>
            )}
          </FormField>
        </div>
        <button type="submit">Save skips</button>
      </form>

      <div class="page-head">
        <h4 id={`${scope}-rules-title`}>Its own rules</h4>
        <button type="button" onClick={() => setEditing({ rule: null })} disabled={editing !== null && !editing.rule}>
          Add a rule<span class="visually-hidden"> to {name}</span>
        </button>
      </div>
      {editing && !editing.rule ? form : null}
      {rules.length ? (
        <GuardrailRulesTable rules={rules} labelledBy={`${scope}-rules-title`} caption={`Guardrail rules of ${name}`} onEdit={(rule) => setEditing({ rule })} onDelete={(rule) => void removeRule(rule)} />
      ) : (
        <Empty>No rules of its own.</Empty>
      )}
      {editing?.rule ? form : null}
    </section>
  );
}
