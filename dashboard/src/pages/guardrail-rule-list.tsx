import type { ComponentChildren } from 'preact';
import { asApiError } from '../api/config-api.js';
import { GUARDRAIL_KINDS, ruleError, ruleOptions, ruleSide, type GuardrailRule } from '../api/guardrails-api.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { EditableList } from '../components/editable-list.js';
import { DataTable, EditButton, Nothing } from '../components/data-table.js';
import { ListState } from '../components/states.js';
import { GuardrailRuleForm } from './guardrail-form.js';

/** Which rule the form is open for: null for a new one; the whole value null when no form is open. */
export type RuleEditing = { rule: GuardrailRule | null } | null;

/**
 * An editable list of guardrail rules: the global ones on the guardrails page, or a key's or team's own. A new
 * rule's form opens above the table, an edit's below it (next to where the button was). `write` stores the whole
 * list with the rule added or replaced; what the API refuses about the rule shows next to its field. The parent
 * holds `editing`, since Escape in its own section must know whether a form is open.
 */
export function GuardrailRuleList({
  rules,
  editing,
  setEditing,
  heading,
  addLabel,
  formScope,
  caption,
  labelledBy,
  ready = true,
  loading = false,
  empty,
  write,
  onSaved,
  onDelete,
}: {
  rules: GuardrailRule[];
  editing: RuleEditing;
  setEditing(editing: RuleEditing): void;
  /** The list's heading (its id is `labelledBy`). */
  heading: ComponentChildren;
  addLabel: ComponentChildren;
  formScope(rule: GuardrailRule | null): string;
  caption?: string;
  labelledBy: string;
  ready?: boolean;
  loading?: boolean;
  empty: string;
  write(rules: GuardrailRule[]): Promise<void>;
  onSaved(rule: GuardrailRule): void;
  onDelete(rule: GuardrailRule): void;
}) {
  const form = editing ? (
    <GuardrailRuleForm
      key={editing.rule ? `edit:${editing.rule.name}` : 'new'}
      scope={formScope(editing.rule)}
      rule={editing.rule}
      existing={rules.map((rule) => rule.name)}
      onCancel={() => setEditing(null)}
      onSave={async (rule) => {
        const index = editing.rule ? rules.findIndex((item) => item.name === editing.rule?.name) : rules.length;
        const next = [...rules];
        next.splice(index, editing.rule ? 1 : 0, rule);
        try {
          await write(next);
        } catch (err) {
          throw ruleError(asApiError(err), 'guardrails.rules', index, rule);
        }
        setEditing(null);
        onSaved(rule);
      }}
    />
  ) : null;

  return (
    <EditableList heading={heading} add={{ label: addLabel, onClick: () => setEditing({ rule: null }), disabled: editing !== null && !editing.rule }} form={form} formIsNew={!editing?.rule}>
      <ListState ready={ready} loading={loading} what="guardrails" count={rules.length} empty={empty}>
        <GuardrailRulesTable rules={rules} labelledBy={labelledBy} caption={caption} onEdit={(rule) => setEditing({ rule })} onDelete={onDelete} />
      </ListState>
    </EditableList>
  );
}

/** The rules of a list, with their options in words; `onEdit`/`onDelete` left out for a read-only list. */
export function GuardrailRulesTable({ rules, labelledBy, onEdit, onDelete, caption }: { rules: GuardrailRule[]; labelledBy: string; onEdit?(rule: GuardrailRule): void; onDelete?(rule: GuardrailRule): void; caption?: string }) {
  return (
    <DataTable labelledBy={labelledBy} caption={caption ?? 'Guardrail rules'} columns={['Name', 'Kind', 'Action', 'Applies to', 'Options', 'Status', onEdit || onDelete ? 'Actions' : null]}>
      {rules.map((rule) => (
        <tr key={rule.name} data-rule={rule.name}>
          <th scope="row">{rule.name}</th>
          <td>{GUARDRAIL_KINDS[rule.kind]?.label ?? rule.kind}</td>
          <td data-col="action">
            <span class={`badge action-${rule.action}`}>{rule.action}</span>
          </td>
          <td>{ruleSide(rule)}</td>
          <td class="wrap" data-col="options">
            {ruleOptions(rule) || <Nothing />}
          </td>
          <td data-col="status">{rule.disabled ? <span class="badge status-4xx">disabled</span> : 'on'}</td>
          {onEdit || onDelete ? (
            <td class="actions">
              {onEdit ? (
                <EditButton what="rule" name={rule.name} onClick={() => onEdit(rule)} />
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
    </DataTable>
  );
}
