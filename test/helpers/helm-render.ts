import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, parseAllDocuments, stringify as stringifyYaml } from 'yaml';

/**
 * Renders a Helm chart the way `helm template` does, for the subset of Go template syntax deploy/helm/tollgate uses
 * (no helm binary is installed where the tests run). Supported, and nothing else:
 *
 *   {{ .Values.a.b }}  {{ .Release.Name }}  {{ .Release.Namespace }}  {{ .Chart.Version }}  {{ .Chart.AppVersion }}
 *   {{ x | quote }}  {{ toYaml x | nindent N }}  {{ x | indent N }}  {{ x | default "y" }}  {{ x | sha256sum }}
 *   {{- if x }} ... {{- else if y }} ... {{- else }} ... {{- end }}   with `not x` as a condition
 *   {{- and -}} whitespace trimming
 *
 * Anything outside the subset (include, range, with, parentheses, an unknown function) throws, so a template
 * cannot quietly drift past what the test checks. It is stricter than Helm in one way, on purpose: printing a
 * value that does not exist throws (Helm prints nothing), so a misspelt `.Values` path fails the test.
 */

type Scope = { Values: Record<string, unknown>; Release: Record<string, unknown>; Chart: Record<string, unknown> };

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'print'; pipeline: string }
  | { kind: 'if'; branches: Array<{ condition: string | null; body: Node[] }> };

interface Action {
  kind: 'action';
  body: string;
}

/** Splits a template into text and actions, applying `{{-` / `-}}` trimming to the neighbouring text. */
function lex(template: string): Array<{ kind: 'text'; text: string } | Action> {
  const tokens: Array<{ kind: 'text'; text: string } | Action> = [];
  const action = /\{\{(-\s)?\s*([\s\S]*?)\s*(\s-)?\}\}/g;
  let last = 0;
  let trimNext = false;
  for (const match of template.matchAll(action)) {
    let text = template.slice(last, match.index);
    if (trimNext) text = text.replace(/^\s+/, '');
    if (match[1]) text = text.replace(/\s+$/, '');
    tokens.push({ kind: 'text', text });
    tokens.push({ kind: 'action', body: match[2]! });
    trimNext = Boolean(match[3]);
    last = match.index + match[0].length;
  }
  let rest = template.slice(last);
  if (trimNext) rest = rest.replace(/^\s+/, '');
  tokens.push({ kind: 'text', text: rest });
  return tokens;
}

/** Builds the tree: if / else if / else / end nest; every other action prints a pipeline. */
function parse(tokens: ReturnType<typeof lex>, name: string): Node[] {
  let at = 0;
  function block(inIf: boolean): { nodes: Node[]; ended: 'end' | 'else' | 'eof'; elseCondition?: string | null } {
    const nodes: Node[] = [];
    while (at < tokens.length) {
      const token = tokens[at++]!;
      if (token.kind === 'text') {
        if (token.text) nodes.push({ kind: 'text', text: token.text });
        continue;
      }
      const body = token.body;
      if (body.startsWith('/*')) continue;
      if (body === 'end') {
        if (!inIf) throw new Error(`${name}: {{ end }} without an if`);
        return { nodes, ended: 'end' };
      }
      if (body === 'else' || body.startsWith('else if ')) {
        if (!inIf) throw new Error(`${name}: {{ else }} without an if`);
        return { nodes, ended: 'else', elseCondition: body === 'else' ? null : body.slice('else if '.length) };
      }
      if (body.startsWith('if ')) {
        const branches: Array<{ condition: string | null; body: Node[] }> = [];
        let condition: string | null = body.slice(3);
        for (;;) {
          const inner = block(true);
          branches.push({ condition, body: inner.nodes });
          if (inner.ended === 'end') break;
          if (inner.ended === 'eof') throw new Error(`${name}: an if without {{ end }}`);
          if (condition === null) throw new Error(`${name}: a branch after {{ else }}`);
          condition = inner.elseCondition ?? null;
        }
        nodes.push({ kind: 'if', branches });
        continue;
      }
      if (/^(range|with|define|template|block|include)\b/.test(body) || /\$|\(/.test(body)) {
        throw new Error(`${name}: "{{ ${body} }}" is outside the template subset this renderer supports`);
      }
      nodes.push({ kind: 'print', pipeline: body });
    }
    return { nodes, ended: 'eof' };
  }
  return block(false).nodes;
}

/** Go template truth: false, 0, nil and empty strings, lists and maps are false. */
function truthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

/** Helm's toYaml: map keys sorted (it marshals through JSON), no trailing newline. */
function toYaml(value: unknown): string {
  return stringifyYaml(value, { sortMapEntries: true }).trimEnd();
}

function indent(width: number, text: string): string {
  const pad = ' '.repeat(width);
  return pad + text.replaceAll('\n', `\n${pad}`);
}

const FUNCTIONS: Record<string, (...args: unknown[]) => unknown> = {
  toYaml: (value) => toYaml(value),
  nindent: (width, text) => `\n${indent(Number(width), String(text))}`,
  indent: (width, text) => indent(Number(width), String(text)),
  quote: (value) => JSON.stringify(value === undefined || value === null ? '' : String(value)),
  default: (fallback, value) => (truthy(value) ? value : fallback),
  not: (value) => !truthy(value),
  sha256sum: (value) => createHash('sha256').update(String(value)).digest('hex'),
};

/** Splits on a separator outside double-quoted strings. */
function splitOutsideQuotes(text: string, separator: RegExp): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === '"' && text[i - 1] !== '\\') quoted = !quoted;
    if (!quoted && separator.test(char)) {
      parts.push(current);
      current = '';
      continue;
    }
    current += char;
  }
  parts.push(current);
  return parts.map((part) => part.trim()).filter((part) => part !== '');
}

function argument(token: string, scope: Scope, where: string): unknown {
  if (token.startsWith('"')) return JSON.parse(token) as string;
  if (/^-?\d+$/.test(token)) return Number(token);
  if (token === 'true' || token === 'false') return token === 'true';
  if (token.startsWith('.')) {
    let value: unknown = scope;
    for (const key of token.slice(1).split('.')) {
      value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
    }
    return value;
  }
  throw new Error(`${where}: cannot read "${token}"`);
}

/** Evaluates `a | f x | g`: each command's result is the last argument of the next. */
function evaluate(pipeline: string, scope: Scope, where: string): unknown {
  let piped: { value: unknown } | null = null;
  for (const command of splitOutsideQuotes(pipeline, /\|/)) {
    const [head, ...rest] = splitOutsideQuotes(command, /\s/);
    const fn = head === undefined ? undefined : FUNCTIONS[head];
    if (fn) {
      const args = rest.map((token) => argument(token, scope, where));
      if (piped) args.push(piped.value);
      piped = { value: fn(...args) };
    } else {
      if (rest.length > 0 || piped || head === undefined) throw new Error(`${where}: unknown function in "${command}"`);
      piped = { value: argument(head, scope, where) };
    }
  }
  return piped?.value;
}

function execute(nodes: Node[], scope: Scope, where: string): string {
  let out = '';
  for (const node of nodes) {
    if (node.kind === 'text') out += node.text;
    else if (node.kind === 'print') {
      const value = evaluate(node.pipeline, scope, where);
      if (value === undefined || value === null) throw new Error(`${where}: "{{ ${node.pipeline} }}" has no value`);
      if (typeof value === 'object') throw new Error(`${where}: "{{ ${node.pipeline} }}" prints a map or list; use toYaml`);
      out += String(value);
    } else {
      const branch = node.branches.find((b) => b.condition === null || truthy(evaluate(b.condition, scope, where)));
      if (branch) out += execute(branch.body, scope, where);
    }
  }
  return out;
}

/** Helm's values merge: maps merge key by key, anything else (lists included) replaces, null removes. */
export function mergeValues(base: Record<string, unknown>, override: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = merged[key];
    if (value === null) delete merged[key];
    else if (isMap(value) && isMap(current)) merged[key] = mergeValues(current, value);
    else merged[key] = value;
  }
  return merged;
}

function isMap(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function renderTemplate(template: string, scope: Scope, name: string): string {
  return execute(parse(lex(template), name), scope, name);
}

export interface RenderedObject {
  template: string;
  object: Record<string, unknown>;
}

export interface RenderOptions {
  releaseName?: string;
  namespace?: string;
  /** Like `helm template --set` / `-f`: merged over the chart's values.yaml. */
  values?: Record<string, unknown>;
}

/** Every object the chart's templates/*.yaml produce, parsed; files starting with `_` and NOTES.txt are not manifests. */
export function renderChart(chartDir: string, options: RenderOptions = {}): RenderedObject[] {
  const chart = parseYaml(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as Record<string, unknown>;
  const defaults = parseYaml(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) as Record<string, unknown>;
  const scope: Scope = {
    Values: mergeValues(defaults, options.values ?? {}),
    Release: { Name: options.releaseName ?? 'tollgate', Namespace: options.namespace ?? 'default', Service: 'Helm' },
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion },
  };
  const objects: RenderedObject[] = [];
  const templates = readdirSync(join(chartDir, 'templates')).filter((file) => file.endsWith('.yaml') && !file.startsWith('_')).sort();
  for (const file of templates) {
    const text = renderTemplate(readFileSync(join(chartDir, 'templates', file), 'utf8'), scope, `templates/${file}`);
    for (const document of parseAllDocuments(text)) {
      if (document.errors.length > 0) throw new Error(`templates/${file} renders invalid YAML: ${document.errors[0]!.message}\n${text}`);
      const object: unknown = document.toJS();
      if (object === null || object === undefined) continue;
      if (!isMap(object)) throw new Error(`templates/${file} renders a document that is not an object`);
      objects.push({ template: file, object });
    }
  }
  return objects;
}
