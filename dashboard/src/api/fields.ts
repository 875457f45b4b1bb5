import { ApiError } from './client.js';

/**
 * The data-driven form fields the alerts and guardrails forms are made of: how each kind of field shows a stored
 * value and reads back what was typed. A section lists its fields (name, label, kind) in one place; the forms
 * follow the list.
 */

/**
 * How a form control reads and writes one field. `secret`: masked when shown, left empty to keep the stored value;
 * `list`: comma-separated (`lines`: one a line); `headers`: `Name: value` a line (`env`: `NAME=value` a line); `bool`: default / on / off;
 * `flag`: one checkbox, true when ticked (left out otherwise); `pairs`: rows of two inputs, `columns` names them.
 */
export type FieldKind = 'text' | 'url' | 'secret' | 'number' | 'list' | 'lines' | 'headers' | 'env' | 'bool' | 'flag' | 'select' | 'checks' | 'pairs';

export interface FieldSpec {
  /** The field's path in the body, `.` for nesting (`retry.max_attempts`): also the `param` the API names. */
  name: string;
  label: string;
  kind: FieldKind;
  hint?: string;
  /** A required `select` has no "default" option. */
  required?: boolean;
  /** For `select` (an empty option reads "default") and `checks`. */
  options?: readonly (string | number)[];
  /** For `pairs`: the two fields of each row object and their labels, e.g. `[['name', 'Name'], ['pattern', 'Pattern']]`. */
  columns?: readonly [readonly [string, string], readonly [string, string]];
}


export function getPath(object: Record<string, unknown>, path: string): unknown {
  let value: unknown = object;
  for (const part of path.split('.')) value = value && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
  return value;
}

/** Sets (or, for undefined, removes) a nested field; an object left empty is removed too. */
export function setPath(object: Record<string, unknown>, path: string, value: unknown): void {
  const [head, ...rest] = path.split('.');
  if (head === undefined) return;
  if (rest.length === 0) {
    if (value === undefined) delete object[head];
    else object[head] = value;
    return;
  }
  const current = object[head];
  const child = current && typeof current === 'object' && !Array.isArray(current) ? { ...(current as Record<string, unknown>) } : {};
  setPath(child, rest.join('.'), value);
  if (Object.keys(child).length) object[head] = child;
  else delete object[head];
}

/** The form name of one column of a `pairs` field's rows (every row's input has it; FormData keeps their order). */
export function pairInput(spec: FieldSpec, column: string): string {
  return `${spec.name}:${column}`;
}

/** A value as a form control shows it. */
export function fieldText(spec: FieldSpec, value: unknown): string {
  if (value === undefined || value === null) return '';
  if (spec.kind === 'list') return Array.isArray(value) ? value.join(', ') : String(value);
  if (spec.kind === 'lines') return Array.isArray(value) ? value.join('\n') : String(value);
  if (spec.kind === 'headers' && typeof value === 'object') return Object.entries(value as Record<string, string>).map(([name, v]) => `${name}: ${v}`).join('\n');
  if (spec.kind === 'env' && typeof value === 'object') return Object.entries(value as Record<string, string>).map(([name, v]) => `${name}=${v}`).join('\n');
  return String(value);
}

/**
 * What a form's data holds for a number input the browser could not read ("6e", "1-2"): such an input reports the
 * value '', which read as empty and so dropped the field to its default. See markUnreadableNumbers.
 */
export const UNREADABLE_NUMBER = '\u0000unreadable number';

/** The refusal of a number field the browser could not read, named as the API names its fields. */
export function unreadableNumber(name: string): ApiError {
  return new ApiError(400, 'must be a number: the browser could not read what was typed here', name, 'invalid_number');
}

/** The form's data, with each number input the browser could not read marked as such instead of empty. */
export function formDataOf(form: HTMLFormElement): FormData {
  const data = new FormData(form);
  for (const input of form.querySelectorAll('input[type="number"]')) {
    if (input instanceof HTMLInputElement && input.name && input.validity.badInput) data.set(input.name, UNREADABLE_NUMBER);
  }
  return data;
}

/** What the user typed, as the API takes it; `''` is undefined (the API's default). The API judges the rest. */
export function fieldValue(spec: FieldSpec, form: FormData): unknown {
  if (spec.kind === 'checks') {
    const picked = form.getAll(spec.name).map((item) => (typeof spec.options?.[0] === 'number' ? Number(item) : String(item)));
    return picked.length ? picked : undefined;
  }
  if (spec.kind === 'pairs') {
    const [[first], [second]] = spec.columns ?? [['name'], ['value']];
    const lefts = form.getAll(pairInput(spec, first)).map((item) => String(item).trim());
    const rights = form.getAll(pairInput(spec, second)).map((item) => String(item).trim());
    // A row left empty is no row; a half-filled one goes to the API, which says what is missing.
    const rows = lefts.map((left, index) => ({ [first]: left, [second]: rights[index] ?? '' })).filter((row) => row[first] || row[second]);
    return rows.length ? rows : undefined;
  }
  const text = String(form.get(spec.name) ?? '').trim();
  if (text === '') return undefined;
  switch (spec.kind) {
    case 'number':
      if (text === UNREADABLE_NUMBER) throw unreadableNumber(spec.name);
      return Number(text);
    case 'bool':
      return text === 'true';
    case 'flag':
      return true;
    case 'list':
    case 'lines': {
      const items = text.split(spec.kind === 'list' ? ',' : '\n').map((item) => item.trim()).filter(Boolean);
      return items.length ? items : undefined;
    }
    case 'headers':
    case 'env': {
      // `Name: value` (headers) or `NAME=value` (environment variables: the value may hold `:` and `=`).
      const [separator, what] = spec.kind === 'env' ? ['=', 'variable as `NAME=value`'] : [':', 'header as `Name: value`'];
      const entries: Record<string, string> = {};
      for (const line of text.split(/\r?\n/)) {
        if (!line.trim()) continue;
        const at = line.indexOf(separator);
        if (at <= 0) throw new ApiError(400, `Write each ${what}: '${line.trim()}' has no ${separator === '=' ? '`=`' : 'colon'}.`, spec.name);
        entries[line.slice(0, at).trim()] = spec.kind === 'env' ? line.slice(at + 1) : line.slice(at + 1).trim();
      }
      return Object.keys(entries).length ? entries : undefined;
    }
    default:
      return text;
  }
}


/**
 * Writes what the form says for each field into `body` (an edit's copy of the item, so fields the form does not show
 * are kept). A secret left empty keeps the stored value: the masked value goes back and the API restores it; its
 * "remove it" box drops it.
 */
export function readFields(body: Record<string, unknown>, fields: FieldSpec[], form: FormData): Record<string, unknown> {
  for (const field of fields) {
    if (field.kind !== 'secret') setPath(body, field.name, fieldValue(field, form));
    else {
      const typed = String(form.get(field.name) ?? '');
      if (typed) setPath(body, field.name, typed);
      else if (form.get(`${field.name}:remove`) === 'on') setPath(body, field.name, undefined);
    }
  }
  return body;
}
