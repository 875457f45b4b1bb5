import { isMap, isPair, isScalar, isSeq, parseDocument, stringify, type Node } from 'yaml';
import { READ_ONLY_FIELDS, type EffectiveConfig } from './api/settings-api.js';

/**
 * The effective config as the YAML the settings page edits, and back. The view's read-only fields (version,
 * precedence, warnings...) are left out of the text: they are shown beside it and never sent.
 */
export function configYaml(view: EffectiveConfig): string {
  const editable: Record<string, unknown> = { ...view };
  for (const field of READ_ONLY_FIELDS) delete editable[field];
  return stringify(editable, { lineWidth: 0 });
}

export type Parsed = { ok: true; value: Record<string, unknown> } | { ok: false; message: string; line: number | null };

/** The text as a document to send, or why it is not one (a YAML syntax error with its line). */
export function parseConfigYaml(text: string): Parsed {
  const document = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const error = document.errors[0];
  if (error) {
    // The first line only: the rest quotes the text with a caret, which the page shows itself.
    return { ok: false, message: error.message.split('\n', 1)[0] ?? error.message, line: error.linePos?.[0]?.line ?? null };
  }
  const value: unknown = document.toJS();
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, message: 'The config must be a YAML mapping (settings:, providers:, routes: ...).', line: 1 };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** The child of `node` named `segment` (a map key, a list index, or the item of a list whose `name` it is). */
function child(node: unknown, segment: string): { node: unknown; offset: number | null } | null {
  if (isMap(node)) {
    for (const pair of node.items) {
      if (isPair(pair) && isScalar(pair.key) && String(pair.key.value) === segment) {
        return { node: pair.value, offset: pair.key.range?.[0] ?? null };
      }
    }
    return null;
  }
  if (isSeq(node)) {
    const index = /^\d+$/.test(segment) ? Number(segment) : -1;
    const byIndex = index >= 0 ? node.items[index] : undefined;
    if (byIndex !== undefined) return { node: byIndex, offset: (byIndex as Node).range?.[0] ?? null };
    // The view lists providers and routes with a `name`; the API names them by it in `providers.<name>...`.
    for (const item of node.items) {
      if (isMap(item) && item.get('name') === segment) return { node: item, offset: item.range?.[0] ?? null };
    }
  }
  return null;
}

/**
 * The line of the text that a field path from the API (`settings.log_retention_days`, `routes.chat.targets.0.weight`)
 * names, or of the nearest part of it that the text has; null when not even the first part is there. Names may
 * hold dots (`gpt-4.1`), so longer joins of the segments are tried first.
 */
export function lineOfField(text: string, path: string): number | null {
  const document = parseDocument(text);
  if (document.errors.length > 0) return null;
  const segments = path.split('.').filter(Boolean);
  let node: unknown = document.contents;
  let offset: number | null = null;
  let i = 0;
  while (i < segments.length) {
    let found: { node: unknown; offset: number | null } | null = null;
    let next = i;
    for (let j = segments.length; j > i && !found; j--) {
      found = child(node, segments.slice(i, j).join('.'));
      next = j;
    }
    if (!found) break;
    node = found.node;
    offset = found.offset ?? offset;
    i = next;
  }
  return offset === null ? null : lineAt(text, offset);
}

/** The character range of a 1-based line, to select it in the textarea. */
export function lineRange(text: string, line: number): [number, number] {
  let start = 0;
  for (let current = 1; current < line; current++) {
    const newline = text.indexOf('\n', start);
    if (newline < 0) break;
    start = newline + 1;
  }
  const end = text.indexOf('\n', start);
  return [start, end < 0 ? text.length : end];
}
