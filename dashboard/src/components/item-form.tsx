import type { ComponentChildren } from 'preact';
import type { ApiError } from '../api/client.js';
import { formDataOf } from '../api/fields.js';
import { ErrorNotice } from './error-notice.js';
import { FormField } from './form-field.js';
import { isGeneral } from './scoped-error.js';
import { useFocusOnOpen } from './spec-field.js';
import './config-forms.css';

/**
 * The frame of a form that adds or changes one item of a config list (an alert channel or rule, a guardrail rule,
 * an MCP server, a route): a heading that takes focus when it opens, the API's message at the top when it names
 * none of the form's fields, the fields, and Save/Cancel. Escape cancels.
 */
export function ItemForm({
  scope,
  class: className,
  title,
  heading = 'h2',
  error,
  known,
  busy,
  submitLabel,
  onSubmit,
  onCancel,
  children,
}: {
  /** Prefix of the form's ids (`new-rule`, `edit-rule`). */
  scope: string;
  class: string;
  title: string;
  /** The heading level where the form sits: h2 on its own page, h3 inside a section. */
  heading?: 'h2' | 'h3';
  error: ApiError | null;
  /** The fields the form shows: an error naming one of them shows there instead of at the top. */
  known: string[];
  busy: boolean;
  submitLabel: string;
  onSubmit(form: FormData): void;
  onCancel(): void;
  children: ComponentChildren;
}) {
  const ref = useFocusOnOpen();
  const Heading = heading;
  return (
    <form
      class={`panel config-form ${className}`}
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        onSubmit(formDataOf(event.target as HTMLFormElement));
      }}
      aria-labelledby={`${scope}-title`}
      onKeyDown={(event) => event.key === 'Escape' && onCancel()}
    >
      <Heading id={`${scope}-title`} tabIndex={-1} ref={ref}>
        {title}
      </Heading>
      {isGeneral(error, known) ? <ErrorNotice error={error} /> : null}
      {children}
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : submitLabel}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/**
 * A new item's name (an edit keeps its name, so shows none) and the select of its type or kind, which decides the
 * fields below it.
 */
export function NameAndKind({
  scope,
  error,
  isNew,
  nameLabel,
  nameHint,
  kindField,
  kinds,
  kind,
  onKind,
}: {
  scope: string;
  error: ApiError | null;
  isNew: boolean;
  nameLabel: string;
  nameHint: string;
  kindField: 'type' | 'kind';
  kinds: Record<string, { label: string }>;
  kind: string;
  onKind(kind: string): void;
}) {
  return (
    <div class="form-grid">
      {isNew ? (
        <FormField name="name" label={nameLabel} scope={scope} error={error} hint={nameHint}>
          {(aria) => <input {...aria} name="name" required autoComplete="off" />}
        </FormField>
      ) : null}
      <FormField name={kindField} label={kindField === 'type' ? 'Type' : 'Kind'} scope={scope} error={error}>
        {(aria) => (
          <select {...aria} name={kindField} value={kind} onChange={(event) => onKind((event.target as HTMLSelectElement).value)}>
            {Object.entries(kinds).map(([value, { label }]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        )}
      </FormField>
    </div>
  );
}

/** The name a submitted form is about: an edit's own, or the one typed for a new item. */
export function submittedName(form: FormData, editing: { name: string } | null): string {
  return editing ? editing.name : String(form.get('name') ?? '').trim();
}
