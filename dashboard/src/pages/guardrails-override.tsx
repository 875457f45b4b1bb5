import { useState } from 'preact/hooks';
import { api, type ApiError } from '../api/client.js';
import { asApiError } from '../api/config-api.js';
import { OUTPUT_BLOCKS, loadGuardrails, overrideBody, type GuardrailRule, type GuardrailsOverride } from '../api/guardrails-api.js';
import { useApi } from '../api/use-api.js';
import { EditorPanel } from '../components/editor-panel.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField } from '../components/form-field.js';
import { isGeneral, scopedError } from '../components/scoped-error.js';
import { SuccessNotice } from '../components/use-actions.js';
import { GuardrailRuleList, type RuleEditing } from './guardrail-rule-list.js';
import './config-pages.css';

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
  const [editing, setEditing] = useState<RuleEditing>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
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

  return (
    <EditorPanel scope={scope} class="guardrails-editor" title={<>Guardrails of the {what} “{name}”</>} onClose={onClose} canClose={() => !editing}>
      <p class="muted">
        Its requests run the global rules (on the <a href="#/guardrails">Guardrails</a> page) minus those skipped here, then its own.
      </p>
      <ErrorNotice error={global.error} />
      <SuccessNotice notice={notice} />

      <form class="config-form" noValidate onSubmit={(event) => void submitSettings(event)} aria-label={`Skipped rules of ${name}`}>
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

      <GuardrailRuleList
        rules={rules}
        editing={editing}
        setEditing={setEditing}
        heading={<h4 id={`${scope}-rules-title`}>Its own rules</h4>}
        addLabel={
          <>
            Add a rule<span class="visually-hidden"> to {name}</span>
          </>
        }
        formScope={() => `${scope}-rule`}
        labelledBy={`${scope}-rules-title`}
        caption={`Guardrail rules of ${name}`}
        empty="No rules of its own."
        write={(next) => save({ ...override, rules: next })}
        onSaved={(rule) => setNotice(`Rule ${rule.name} saved for this ${what}.`)}
        onDelete={(rule) => void removeRule(rule)}
      />
    </EditorPanel>
  );
}
