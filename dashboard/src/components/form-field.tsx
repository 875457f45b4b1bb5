import type { ComponentChildren } from 'preact';
import type { ApiError } from '../api/client.js';
import { unreadableNumber } from '../api/fields.js';
import { FieldProblem, fieldError } from './error-notice.js';

/**
 * A labelled form control with the API's validation message under it when the API named this field. The
 * control is passed as a render function so it gets the ids that tie the message to it.
 */
export function FormField(props: { name: string; label: string; scope?: string; error: ApiError | null; hint?: string; children: (aria: { id: string; 'aria-invalid'?: boolean; 'aria-describedby'?: string }) => ComponentChildren }) {
  // `scope` keeps ids unique when two forms on a page have a field of the same name.
  const id = `${props.scope ?? 'field'}-${props.name}`;
  const problem = fieldError(props.error, props.name);
  const described = [problem ? `${id}-error` : '', props.hint ? `${id}-hint` : ''].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children({ id, 'aria-invalid': problem ? true : undefined, 'aria-describedby': described || undefined })}
      {props.hint ? (
        <span class="muted hint" id={`${id}-hint`}>
          {props.hint}
        </span>
      ) : null}
      <FieldProblem id={`${id}-error`} problem={problem} />
    </div>
  );
}

/** `''` -> undefined (left to the API's default), otherwise the number typed (the API judges it). */
function optionalNumber(value: FormDataEntryValue | null): number | undefined {
  const text = String(value ?? '').trim();
  return text === '' ? undefined : Number(text);
}

/**
 * The number typed in the form's `name` input, undefined when it is empty; an ApiError naming the field when the
 * browser could not read it as a number. A number input holding text such as "5e" or "1-2" reports the value ''
 * (validity.badInput), which read as empty and so sent no budget or limit at all: the key was created unlimited.
 */
export function numberField(form: HTMLFormElement, name: string): number | undefined {
  const input = form.elements.namedItem(name);
  if (input instanceof HTMLInputElement && input.validity.badInput) throw unreadableNumber(name);
  return optionalNumber(new FormData(form).get(name));
}
