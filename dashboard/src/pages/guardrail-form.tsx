import { useState } from 'preact/hooks';
import { ApiError } from '../api/client.js';
import { asApiError } from '../api/config-api.js';
import { fieldValue, getPath, setPath } from '../api/fields.js';
import { GUARDRAIL_KINDS, commonFields, type GuardrailRule } from '../api/guardrails-api.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField } from '../components/form-field.js';
import { isGeneral } from '../components/scoped-error.js';
import { SpecField, useFocusOnOpen } from '../components/spec-field.js';
import './guardrails.css';

const RULE_NAME = /^\S.{0,99}$/;

/**
 * Adds or changes one guardrail rule, on the guardrails page (the top-level rules) and in a key's or team's
 * editor (its own rules): the fields follow the kind (GUARDRAIL_KINDS). An edit keeps whatever else the rule had.
 * `onSave` writes it; an ApiError it throws, its param relative to the rule (`patterns`), shows next to that field.
 */
export function GuardrailRuleForm({
  rule,
  existing,
  scope,
  onSave,
  onCancel,
}: {
  rule: GuardrailRule | null;
  /** Names already taken in the list the rule goes into. */
  existing: string[];
  /** Keeps ids unique when two such forms could be on one page. */
  scope: string;
  onSave(rule: GuardrailRule): Promise<void>;
  onCancel(): void;
}) {
  const [kind, setKind] = useState(rule?.kind ?? 'payment_card');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const heading = useFocusOnOpen();
  const same = rule !== null && rule.kind === kind;
  const common = commonFields(kind);
  const fields = [...(GUARDRAIL_KINDS[kind]?.fields ?? []), ...common];

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const name = rule ? rule.name : String(form.get('name') ?? '').trim();
    setError(null);
    if (!name) return setError(new ApiError(400, 'Name the rule: findings, events and skips name it.', 'name'));
    if (!rule && existing.includes(name)) return setError(new ApiError(409, `A rule named '${name}' exists: edit it instead.`, 'name'));
    if (!RULE_NAME.test(name)) return setError(new ApiError(400, 'At most 100 characters.', 'name'));
    let body: GuardrailRule;
    try {
      // A kind changed starts from an empty rule; an edit of the same kind keeps the fields the form does not show.
      const start: Record<string, unknown> = same ? { ...rule } : { name };
      start.kind = kind;
      for (const field of fields) setPath(start, field.name, fieldValue(field, form));
      body = start as GuardrailRule;
    } catch (err) {
      return setError(asApiError(err));
    }
    setBusy(true);
    try {
      await onSave(body);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };

  const known = ['name', 'kind', ...fields.map((field) => field.name)];
  const title = rule ? `Edit rule ${rule.name}` : 'Add a rule';
  return (
    <form class="panel guardrail-form" noValidate onSubmit={(event) => void submit(event)} aria-labelledby={`${scope}-title`} onKeyDown={(event) => event.key === 'Escape' && onCancel()}>
      <h3 id={`${scope}-title`} tabIndex={-1} ref={heading}>
        {title}
      </h3>
      {isGeneral(error, known) ? <ErrorNotice error={error} /> : null}
      <div class="form-grid">
        {rule ? null : (
          <FormField name="name" label="Rule name" scope={scope} error={error} hint="findings and skips name it, e.g. cards">
            {(aria) => <input {...aria} name="name" required autoComplete="off" />}
          </FormField>
        )}
        <FormField name="kind" label="Kind" scope={scope} error={error}>
          {(aria) => (
            <select {...aria} name="kind" value={kind} onChange={(event) => setKind((event.target as HTMLSelectElement).value)}>
              {Object.entries(GUARDRAIL_KINDS).map(([value, { label }]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </FormField>
      </div>
      {/* Keyed by kind: switching kinds gives fresh controls. */}
      <div class="form-grid" key={kind}>
        {fields.map((field) => (
          <SpecField key={field.name} spec={field} scope={scope} error={error} stored={same || common.includes(field) ? getPath(rule ?? {}, field.name) : undefined} />
        ))}
      </div>
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : rule ? 'Save rule' : 'Add rule'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
