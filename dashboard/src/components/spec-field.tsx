import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from '../api/client.js';
import { fieldText, pairInput, type FieldSpec } from '../api/fields.js';
import { FieldProblem, fieldError } from './error-notice.js';
import { FormField } from './form-field.js';
import './config-forms.css';

/**
 * One field of a data-driven form (an alert channel type, an alert rule kind, a guardrail rule kind), as its
 * control. `stored` is what the API shows now (masked for a secret); the API's message for the field shows under it.
 */
export function SpecField({ spec, scope, error, stored }: { spec: FieldSpec; scope: string; error: ApiError | null; stored: unknown }) {
  if (spec.kind === 'checks') {
    const picked = Array.isArray(stored) ? stored.map(String) : [];
    const problem = fieldError(error, spec.name);
    return (
      <fieldset class="field checks" aria-invalid={problem ? true : undefined} aria-describedby={problem ? `${scope}-${spec.name}-error` : undefined}>
        <legend>{spec.label}</legend>
        {(spec.options ?? []).map((option) => (
          <label key={String(option)}>
            <input type="checkbox" name={spec.name} value={String(option)} defaultChecked={picked.includes(String(option))} /> {String(option)}
          </label>
        ))}
        {spec.hint ? <span class="muted hint">{spec.hint}</span> : null}
        <FieldProblem id={`${scope}-${spec.name}-error`} problem={problem} />
      </fieldset>
    );
  }
  if (spec.kind === 'pairs') return <PairsField spec={spec} scope={scope} error={error} stored={stored} />;
  if (spec.kind === 'flag') {
    const problem = fieldError(error, spec.name);
    const id = `${scope}-${spec.name}`;
    return (
      <div class="field flag">
        <label for={id}>
          <input id={id} type="checkbox" name={spec.name} value="true" defaultChecked={stored === true} aria-invalid={problem ? true : undefined} aria-describedby={problem ? `${id}-error` : undefined} />{' '}
          {spec.label}
        </label>
        {spec.hint ? <span class="muted hint">{spec.hint}</span> : null}
        <FieldProblem id={`${id}-error`} problem={problem} />
      </div>
    );
  }
  const storedSecret = spec.kind === 'secret' && typeof stored === 'string' ? stored : null;
  const hint = storedSecret ? `stored: ${storedSecret}; leave empty to keep it` : spec.hint;
  return (
    <FormField name={spec.name} label={spec.label} scope={scope} error={error} hint={hint}>
      {(aria) => {
        const common = { ...aria, name: spec.name, autoComplete: 'off', required: spec.required };
        switch (spec.kind) {
          case 'secret':
            return <input {...common} type="password" autoComplete="new-password" />;
          case 'number':
            return <input {...common} type="number" step="any" inputMode="decimal" defaultValue={fieldText(spec, stored)} />;
          case 'headers':
          case 'env':
          case 'lines':
            return <textarea {...common} rows={3} defaultValue={fieldText(spec, stored)} />;
          case 'bool':
            return (
              // `selected` on the option: Preact sets a select's defaultValue before its options exist, so it would not take.
              <select {...common}>
                <option value="">default</option>
                <option value="true" selected={stored === true}>
                  on
                </option>
                <option value="false" selected={stored === false}>
                  off
                </option>
              </select>
            );
          case 'select':
            return (
              <select {...common}>
                {spec.required ? null : <option value="">default</option>}
                {(spec.options ?? []).map((option) => (
                  <option key={String(option)} value={String(option)} selected={fieldText(spec, stored) === String(option)}>
                    {String(option)}
                  </option>
                ))}
              </select>
            );
          case 'url':
            return <input {...common} type="url" defaultValue={fieldText(spec, stored)} />;
          default:
            return <input {...common} type="text" defaultValue={fieldText(spec, stored)} />;
        }
      }}
    </FormField>
  );
}

/** Rows of two inputs (a custom format's name and pattern), one more added on demand; an empty row is left out. */
function PairsField({ spec, scope, error, stored }: { spec: FieldSpec; scope: string; error: ApiError | null; stored: unknown }) {
  const [[first, firstLabel], [second, secondLabel]] = spec.columns ?? [['name', 'Name'], ['value', 'Value']];
  const initial = Array.isArray(stored) ? (stored as Record<string, unknown>[]) : [];
  const [rows, setRows] = useState(Math.max(initial.length, 1));
  const problem = fieldError(error, spec.name);
  const id = `${scope}-${spec.name}`;
  return (
    <fieldset class="field pairs" aria-invalid={problem ? true : undefined} aria-describedby={problem ? `${id}-error` : undefined}>
      <legend>{spec.label}</legend>
      {Array.from({ length: rows }, (_, index) => (
        <div class="pair" key={index}>
          <label>
            {firstLabel} {index + 1}
            <input name={pairInput(spec, first)} autoComplete="off" defaultValue={String(initial[index]?.[first] ?? '')} />
          </label>
          <label>
            {secondLabel} {index + 1}
            <input name={pairInput(spec, second)} autoComplete="off" defaultValue={String(initial[index]?.[second] ?? '')} />
          </label>
        </div>
      ))}
      <button type="button" onClick={() => setRows(rows + 1)}>
        Add a row<span class="visually-hidden"> to {spec.label}</span>
      </button>
      {spec.hint ? <span class="muted hint">{spec.hint}</span> : null}
      <FieldProblem id={`${id}-error`} problem={problem} />
    </fieldset>
  );
}

/**
 * Focus the form's heading once when it opens (it is opened by a button elsewhere on the page), and give the focus
 * back to that button when it closes (saved, cancelled, Escape): the focused control went away with the form, and
 * a keyboard user was left at the top of the page.
 */
export function useFocusOnOpen() {
  const heading = useRef<HTMLHeadingElement>(null);
  // Read at the first render, before the click that opened the form has re-rendered the page (an Add button is
  // disabled while its form is open, and a disabled button loses the focus).
  const [opener] = useState(() => (document.activeElement instanceof HTMLElement && document.activeElement !== document.body ? document.activeElement : null));
  // A layout effect, not a passive one: a passive effect waits for a painted frame, and a form closed before then
  // (Escape pressed at once, on a busy machine) was unmounted with its effect never run, so nothing gave the focus back.
  useLayoutEffect(() => {
    heading.current?.focus();
    return () => {
      // Once the form is gone from the page; unless the user has put the focus somewhere since. The opener may still
      // be disabled for a moment (its page re-renders after the form is gone, more slowly on a busy machine), and a
      // disabled button takes no focus: tried again for a few frames.
      const restore = (tries: number): void => {
        const active = document.activeElement;
        if (!opener?.isConnected || (active !== null && active !== document.body)) return;
        opener.focus();
        if (document.activeElement !== opener && tries > 0) setTimeout(() => restore(tries - 1), 16);
      };
      setTimeout(() => restore(30), 0);
    };
  }, []);
  return heading;
}

/**
 * The fields of the item's type or kind, keyed by it: switching gives fresh, empty controls. `stored` is what the
 * item has for a field when it is shown (undefined for a new item or another kind). With `removableSecrets`, a
 * stored secret that is not required gets a "remove it" box (left empty, a secret keeps what is stored).
 */
export function SpecFields({ kind, fields, scope, error, stored, removableSecrets = false }: { kind: string; fields: FieldSpec[]; scope: string; error: ApiError | null; stored(field: FieldSpec): unknown; removableSecrets?: boolean }) {
  return (
    <div class="form-grid" key={kind}>
      {fields.map((field) => {
        const value = stored(field);
        if (!removableSecrets) return <SpecField key={field.name} spec={field} scope={scope} error={error} stored={value} />;
        return (
          <div key={field.name}>
            <SpecField spec={field} scope={scope} error={error} stored={value} />
            {field.kind === 'secret' && !field.required && value !== undefined ? (
              <label class="remove-secret">
                <input type="checkbox" name={`${field.name}:remove`} /> remove it
              </label>
            ) : null}
          </div>
        );
      })}
    </div>
  );
}
