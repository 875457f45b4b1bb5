import { useState } from 'preact/hooks';
import { getPath, readFields } from '../api/fields.js';
import { GUARDRAIL_KINDS, commonFields, type GuardrailRule } from '../api/guardrails-api.js';
import { ItemForm, NameAndKind, submittedName } from '../components/item-form.js';
import { SpecFields } from '../components/spec-field.js';
import { nameProblem, useFormSave } from '../components/use-form-save.js';

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
  const { error, busy, save } = useFormSave();
  const same = rule !== null && rule.kind === kind;
  const common = commonFields(kind);
  const fields = [...(GUARDRAIL_KINDS[kind]?.fields ?? []), ...common];

  const submit = (form: FormData) => {
    const name = submittedName(form, rule);
    return save(() => {
      const problem = nameProblem(name, { isNew: !rule, existing, what: 'rule', pattern: RULE_NAME, missing: 'Name the rule: findings, events and skips name it.', shape: 'At most 100 characters.' });
      if (problem) throw problem;
      // A kind changed starts from an empty rule; an edit of the same kind keeps the fields the form does not show.
      const start: Record<string, unknown> = same ? { ...rule } : { name };
      start.kind = kind;
      return readFields(start, fields, form) as GuardrailRule;
    }, onSave);
  };

  return (
    <ItemForm scope={scope} class="guardrail-form" heading="h3" title={rule ? `Edit rule ${rule.name}` : 'Add a rule'} error={error} known={['name', 'kind', ...fields.map((field) => field.name)]} busy={busy} submitLabel={rule ? 'Save rule' : 'Add rule'} onSubmit={(form) => void submit(form)} onCancel={onCancel}>
      <NameAndKind scope={scope} error={error} isNew={!rule} nameLabel="Rule name" nameHint="findings and skips name it, e.g. cards" kindField="kind" kinds={GUARDRAIL_KINDS} kind={kind} onKind={setKind} />
      <SpecFields kind={kind} fields={fields} scope={scope} error={error} stored={(field) => (same || common.includes(field) ? getPath(rule ?? {}, field.name) : undefined)} />
    </ItemForm>
  );
}
