import { useState } from 'preact/hooks';
import {
  CHANNEL_TYPES,
  RULE_KINDS,
  SEVERITIES,
  channelPath,
  fieldValue,
  getPath,
  itemError,
  rulePath,
  setPath,
  type AlertChannelView,
  type AlertRuleView,
  type FieldSpec,
} from '../api/alerts-api.js';
import { ApiError } from '../api/client.js';
import { apiPut, asApiError } from '../api/config-api.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField } from '../components/form-field.js';
import { isGeneral } from '../components/scoped-error.js';
import { SpecField, useFocusOnOpen } from '../components/spec-field.js';

/**
 * The forms that add or change one alert channel or one rule (`PUT /api/alerts/channels/:name`,
 * `PUT /api/alerts/rules/:name`). Their fields come from the per-type lists in alerts-api.ts; an edit sends back
 * everything else the item had unchanged, and a secret left empty keeps the stored one (the API restores a masked
 * value it gave).
 */

const CHANNEL_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export function ChannelForm({ channel, existing, onSaved, onCancel }: { channel: AlertChannelView | null; existing: string[]; onSaved(name: string): void; onCancel(): void }) {
  const [type, setType] = useState(channel?.type ?? 'webhook');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const heading = useFocusOnOpen();
  const scope = channel ? 'edit-channel' : 'new-channel';
  const spec = CHANNEL_TYPES[type];
  const fields = spec?.fields ?? [];
  // Fields of another type are not shown its values: a type changed starts from an empty channel.
  const same = channel !== null && channel.type === type;

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const name = channel ? channel.name : String(form.get('name') ?? '').trim();
    setError(null);
    if (!name) return setError(new ApiError(400, 'Name the channel: rules name it to deliver there.', 'name'));
    if (!channel && existing.includes(name)) return setError(new ApiError(409, `A channel named '${name}' exists: edit it instead.`, 'name'));
    if (!CHANNEL_NAME.test(name)) return setError(new ApiError(400, 'Letters, digits, `_` and `-`, at most 64, starting with a letter or digit.', 'name'));
    let body: Record<string, unknown>;
    try {
      const { name: _name, ...rest } = same ? channel : { name };
      body = { ...rest, type };
      for (const field of fields) {
        if (field.kind === 'secret') {
          const typed = String(form.get(field.name) ?? '');
          // Empty keeps what is stored (the masked value goes back and the API restores it); "remove" drops it.
          if (typed) setPath(body, field.name, typed);
          else if (form.get(`${field.name}:remove`) === 'on') setPath(body, field.name, undefined);
        } else setPath(body, field.name, fieldValue(field, form));
      }
    } catch (err) {
      return setError(asApiError(err));
    }
    setBusy(true);
    try {
      await apiPut(channelPath(name), body);
      onSaved(name);
    } catch (err) {
      setError(itemError(asApiError(err), /^alerts\.channels\.[^.]+\./));
    } finally {
      setBusy(false);
    }
  };

  const known = ['name', 'type', ...fields.map((field) => field.name), ...(fields.some((field) => field.name.startsWith('retry.')) ? ['retry'] : [])];
  const title = channel ? `Edit channel ${channel.name}` : 'Add a channel';
  return (
    <form class="panel alert-form" noValidate onSubmit={(event) => void submit(event)} aria-labelledby={`${scope}-title`} onKeyDown={(event) => event.key === 'Escape' && onCancel()}>
      <h2 id={`${scope}-title`} tabIndex={-1} ref={heading}>
        {title}
      </h2>
      {isGeneral(error, known) ? <ErrorNotice error={error} /> : null}
      <div class="form-grid">
        {channel ? null : (
          <FormField name="name" label="Channel name" scope={scope} error={error} hint="rules name it, e.g. ops">
            {(aria) => <input {...aria} name="name" required autoComplete="off" />}
          </FormField>
        )}
        <FormField name="type" label="Type" scope={scope} error={error}>
          {(aria) => (
            <select {...aria} name="type" value={type} onChange={(event) => setType((event.target as HTMLSelectElement).value)}>
              {Object.entries(CHANNEL_TYPES).map(([value, { label }]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </FormField>
      </div>
      {/* Keyed by type: switching types gives fresh, empty controls. */}
      <div class="form-grid" key={type}>
        {fields.map((field) => (
          <div key={field.name}>
            <SpecField spec={field} scope={scope} error={error} stored={same ? getPath(channel, field.name) : undefined} />
            {field.kind === 'secret' && !field.required && same && getPath(channel, field.name) !== undefined ? (
              <label class="remove-secret">
                <input type="checkbox" name={`${field.name}:remove`} /> remove it
              </label>
            ) : null}
          </div>
        ))}
      </div>
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : channel ? 'Save channel' : 'Add channel'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

const RULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

export function RuleForm({ rule, existing, channels, onSaved, onCancel }: { rule: AlertRuleView | null; existing: string[]; channels: string[]; onSaved(name: string): void; onCancel(): void }) {
  const [kind, setKind] = useState(rule?.kind ?? 'budget');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const heading = useFocusOnOpen();
  const scope = rule ? 'edit-rule' : 'new-rule';
  const same = rule !== null && rule.kind === kind;
  const common: FieldSpec[] = [
    { name: 'severity', label: 'Severity', kind: 'select', options: SEVERITIES, hint: 'default: warning' },
    { name: 'cooldown_ms', label: 'Cooldown (ms)', kind: 'number', hint: 'before the same alert fires again; default 600000 (10 min)' },
    ...(channels.length ? [{ name: 'channels', label: 'Deliver to', kind: 'checks', options: channels, hint: 'none ticked: every channel' } satisfies FieldSpec] : []),
  ];
  const fields = [...(RULE_KINDS[kind]?.fields ?? []), ...common];

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const name = rule ? rule.name : String(form.get('name') ?? '').trim();
    setError(null);
    if (!name) return setError(new ApiError(400, 'Name the rule: it is the `rule` of every notification.', 'name'));
    if (!rule && existing.includes(name)) return setError(new ApiError(409, `A rule named '${name}' exists: edit it instead.`, 'name'));
    if (!RULE_NAME.test(name)) return setError(new ApiError(400, 'Letters, digits, `_`, `.` and `-`, at most 100, starting with a letter or digit.', 'name'));
    let body: Record<string, unknown>;
    try {
      const { name: _name, ...rest } = same ? rule : { name };
      body = { ...rest, kind };
      for (const field of fields) setPath(body, field.name, fieldValue(field, form));
    } catch (err) {
      return setError(asApiError(err));
    }
    setBusy(true);
    try {
      await apiPut(rulePath(name), body);
      onSaved(name);
    } catch (err) {
      setError(itemError(asApiError(err), /^alerts\.rules\.\d+\./));
    } finally {
      setBusy(false);
    }
  };

  const known = ['name', 'kind', ...fields.map((field) => field.name)];
  const title = rule ? `Edit rule ${rule.name}` : 'Add a rule';
  return (
    <form class="panel alert-form" noValidate onSubmit={(event) => void submit(event)} aria-labelledby={`${scope}-title`} onKeyDown={(event) => event.key === 'Escape' && onCancel()}>
      <h2 id={`${scope}-title`} tabIndex={-1} ref={heading}>
        {title}
      </h2>
      {isGeneral(error, known) ? <ErrorNotice error={error} /> : null}
      <div class="form-grid">
        {rule ? null : (
          <FormField name="name" label="Rule name" scope={scope} error={error} hint="the `rule` of its notifications, e.g. budget-half">
            {(aria) => <input {...aria} name="name" required autoComplete="off" />}
          </FormField>
        )}
        <FormField name="kind" label="Kind" scope={scope} error={error}>
          {(aria) => (
            <select {...aria} name="kind" value={kind} onChange={(event) => setKind((event.target as HTMLSelectElement).value)}>
              {Object.entries(RULE_KINDS).map(([value, { label }]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </FormField>
      </div>
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
