import { useState } from 'preact/hooks';
import { CHANNEL_TYPES, RULE_KINDS, SEVERITIES, channelPath, getPath, itemError, rulePath, type AlertChannelView, type AlertRuleView, type FieldSpec } from '../api/alerts-api.js';
import { apiPut } from '../api/config-api.js';
import { readFields } from '../api/fields.js';
import { ItemForm, NameAndKind, submittedName } from '../components/item-form.js';
import { SpecFields } from '../components/spec-field.js';
import { nameProblem, useFormSave } from '../components/use-form-save.js';

/**
 * The forms that add or change one alert channel or one rule (`PUT /api/alerts/channels/:name`,
 * `PUT /api/alerts/rules/:name`). Their fields come from the per-type lists in alerts-api.ts; an edit sends back
 * everything else the item had unchanged, and a secret left empty keeps the stored one (the API restores a masked
 * value it gave).
 */

const CHANNEL_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export function ChannelForm({ channel, existing, onSaved, onCancel }: { channel: AlertChannelView | null; existing: string[]; onSaved(name: string): void; onCancel(): void }) {
  const [type, setType] = useState(channel?.type ?? 'webhook');
  const { error, busy, save } = useFormSave();
  const scope = channel ? 'edit-channel' : 'new-channel';
  const fields = CHANNEL_TYPES[type]?.fields ?? [];
  // Fields of another type are not shown its values: a type changed starts from an empty channel.
  const same = channel !== null && channel.type === type;

  const submit = (form: FormData) => {
    const name = submittedName(form, channel);
    return save(
      () => {
        const problem = nameProblem(name, { isNew: !channel, existing, what: 'channel', pattern: CHANNEL_NAME, missing: 'Name the channel: rules name it to deliver there.', shape: 'Letters, digits, `_` and `-`, at most 64, starting with a letter or digit.' });
        if (problem) throw problem;
        const { name: _name, ...rest } = same ? channel : { name };
        return readFields({ ...rest, type }, fields, form);
      },
      async (body) => {
        await apiPut(channelPath(name), body);
        onSaved(name);
      },
      (err) => itemError(err, /^alerts\.channels\.[^.]+\./),
    );
  };

  const known = ['name', 'type', ...fields.map((field) => field.name), ...(fields.some((field) => field.name.startsWith('retry.')) ? ['retry'] : [])];
  return (
    <ItemForm scope={scope} class="alert-form" title={channel ? `Edit channel ${channel.name}` : 'Add a channel'} error={error} known={known} busy={busy} submitLabel={channel ? 'Save channel' : 'Add channel'} onSubmit={(form) => void submit(form)} onCancel={onCancel}>
      <NameAndKind scope={scope} error={error} isNew={!channel} nameLabel="Channel name" nameHint="rules name it, e.g. ops" kindField="type" kinds={CHANNEL_TYPES} kind={type} onKind={setType} />
      <SpecFields kind={type} fields={fields} scope={scope} error={error} stored={(field) => (same ? getPath(channel, field.name) : undefined)} removableSecrets />
    </ItemForm>
  );
}

const RULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

export function RuleForm({ rule, existing, channels, onSaved, onCancel }: { rule: AlertRuleView | null; existing: string[]; channels: string[]; onSaved(name: string): void; onCancel(): void }) {
  const [kind, setKind] = useState(rule?.kind ?? 'budget');
  const { error, busy, save } = useFormSave();
  const scope = rule ? 'edit-rule' : 'new-rule';
  const same = rule !== null && rule.kind === kind;
  const common: FieldSpec[] = [
    { name: 'severity', label: 'Severity', kind: 'select', options: SEVERITIES, hint: 'default: warning' },
    { name: 'cooldown_ms', label: 'Cooldown (ms)', kind: 'number', hint: 'before the same alert fires again; default 600000 (10 min)' },
    ...(channels.length ? [{ name: 'channels', label: 'Deliver to', kind: 'checks', options: channels, hint: 'none ticked: every channel' } satisfies FieldSpec] : []),
  ];
  const fields = [...(RULE_KINDS[kind]?.fields ?? []), ...common];

  const submit = (form: FormData) => {
    const name = submittedName(form, rule);
    return save(
      () => {
        const problem = nameProblem(name, { isNew: !rule, existing, what: 'rule', pattern: RULE_NAME, missing: 'Name the rule: it is the `rule` of every notification.', shape: 'Letters, digits, `_`, `.` and `-`, at most 100, starting with a letter or digit.' });
        if (problem) throw problem;
        const { name: _name, ...rest } = same ? rule : { name };
        return readFields({ ...rest, kind }, fields, form);
      },
      async (body) => {
        await apiPut(rulePath(name), body);
        onSaved(name);
      },
      (err) => itemError(err, /^alerts\.rules\.\d+\./),
    );
  };

  return (
    <ItemForm scope={scope} class="alert-form" title={rule ? `Edit rule ${rule.name}` : 'Add a rule'} error={error} known={['name', 'kind', ...fields.map((field) => field.name)]} busy={busy} submitLabel={rule ? 'Save rule' : 'Add rule'} onSubmit={(form) => void submit(form)} onCancel={onCancel}>
      <NameAndKind scope={scope} error={error} isNew={!rule} nameLabel="Rule name" nameHint="the `rule` of its notifications, e.g. budget-half" kindField="kind" kinds={RULE_KINDS} kind={kind} onKind={setKind} />
      <SpecFields kind={kind} fields={fields} scope={scope} error={error} stored={(field) => (same || common.includes(field) ? getPath(rule ?? {}, field.name) : undefined)} />
    </ItemForm>
  );
}
