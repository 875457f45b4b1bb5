import { api, ApiError } from './client.js';
import type { FieldSpec } from './fields.js';

/**
 * What the guardrails page and the key and team editors read and write (README "Guardrails"): the section as the
 * effective config shows it (`GET /api/config`), written whole with `PATCH /api/config`, and a key's or team's
 * `guardrails` override. In one place, the fields each rule kind has, so the forms and the table follow them (a
 * field renamed or added is one line here).
 */

export type GuardrailAction = 'block' | 'redact' | 'flag';
export type GuardrailSide = 'input' | 'output' | 'both';
export type OutputBlock = 'content_filter' | 'error';

/** A rule as written (the API adds no defaults): its kind's own options beside the common fields. */
export interface GuardrailRule {
  name: string;
  kind: string;
  action: GuardrailAction | string;
  applies_to?: GuardrailSide | string;
  placeholder?: string;
  disabled?: boolean;
  [field: string]: unknown;
}

/** The top-level section: every request's rules. */
export interface GuardrailsSection {
  rules?: GuardrailRule[];
  output_block?: OutputBlock | string;
  look_behind_chars?: number;
}

/** What a route, a virtual key or a team changes of the rules above it. */
export interface GuardrailsOverride {
  rules?: GuardrailRule[];
  skip?: string[];
  output_block?: OutputBlock | string;
}

/** The parts of `GET /api/config` the page reads. */
export interface GuardrailsConfigView {
  guardrails?: GuardrailsSection;
  routes: { name: string; source: string; guardrails?: GuardrailsOverride }[];
}

/** Where the top-level rules come from: the API layer's section replaces the file's as a whole. */
export type GuardrailsSource = 'api' | 'file' | 'none';

export async function loadGuardrails(signal: AbortSignal): Promise<{ view: GuardrailsConfigView; source: GuardrailsSource }> {
  const [view, apiLayer] = await Promise.all([api.get<GuardrailsConfigView>('/config', {}, signal), api.get<Record<string, unknown>>('/config', { layer: 'api' }, signal)]);
  const source: GuardrailsSource = 'guardrails' in apiLayer ? 'api' : view.guardrails?.rules?.length || view.guardrails?.look_behind_chars !== undefined ? 'file' : 'none';
  return { view, source };
}

/** One `PATCH /api/config` with the whole section (a field left out is removed from the API's section). */
export function saveGuardrails(section: GuardrailsSection): Promise<unknown> {
  return api.patch('/config', { guardrails: { rules: section.rules ?? [], output_block: section.output_block ?? null, look_behind_chars: section.look_behind_chars ?? null } });
}

/** The API's section dropped: the config file's (if any) applies again. */
export function revertGuardrails(): Promise<unknown> {
  return api.patch('/config', { guardrails: null });
}

/** An override as the API takes it: null when it changes nothing. */
export function overrideBody(override: GuardrailsOverride): GuardrailsOverride | null {
  const body: GuardrailsOverride = {};
  if (override.rules?.length) body.rules = override.rules;
  if (override.skip?.length) body.skip = override.skip;
  if (override.output_block) body.output_block = override.output_block;
  return Object.keys(body).length ? body : null;
}

// ---- the fields of each rule kind --------------------------------------------------------------------------------

export const ACTIONS: readonly GuardrailAction[] = ['block', 'redact', 'flag'];
export const SIDES: readonly GuardrailSide[] = ['input', 'output', 'both'];
export const OUTPUT_BLOCKS: readonly OutputBlock[] = ['content_filter', 'error'];
const NATIONAL_ID_FORMATS = ['us_ssn', 'uk_nino', 'es_dni', 'nl_bsn'] as const;
const SECRET_TYPES = ['anthropic', 'openai', 'aws_access_key_id', 'aws_secret_access_key', 'github', 'slack', 'google_api_key', 'stripe', 'jwt', 'private_key'] as const;

export interface GuardrailKind {
  label: string;
  /** Its own options, in form order. */
  fields: FieldSpec[];
  /** The actions it takes (moderation and json_schema do not redact). */
  actions: readonly GuardrailAction[];
  /** The sides it may check, and the one it checks when `applies_to` is left out. */
  sides: readonly GuardrailSide[];
  defaultSide: GuardrailSide;
}

const detector = (label: string, fields: FieldSpec[] = [], defaultSide: GuardrailSide = 'both'): GuardrailKind => ({ label, fields, actions: ACTIONS, sides: SIDES, defaultSide });

/** The rule kinds and their own options (README "Guardrails", the table of kinds). */
export const GUARDRAIL_KINDS: Record<string, GuardrailKind> = {
  email: detector('Email addresses'),
  phone: detector('Phone numbers'),
  payment_card: detector('Payment cards (Luhn)', [{ name: 'require_known_iin', label: 'Only known card brands', kind: 'flag', hint: 'numbers whose issuer prefix belongs to a major brand' }]),
  iban: detector('IBANs (mod 97)'),
  national_id: detector('National IDs', [
    { name: 'formats', label: 'Built-in formats', kind: 'checks', options: NATIONAL_ID_FORMATS, hint: 'none ticked: us_ssn, uk_nino and es_dni' },
    { name: 'custom_formats', label: 'Your own formats', kind: 'pairs', columns: [['name', 'Format name'], ['pattern', 'Pattern']], hint: 'a name and a regular expression; empty rows are left out' },
  ]),
  secret: detector('Secrets (API keys, tokens, private keys)', [{ name: 'types', label: 'Secret types', kind: 'checks', options: SECRET_TYPES, hint: 'none ticked: all of them' }]),
  prompt_injection: detector('Prompt injection', [{ name: 'threshold', label: 'Score threshold', kind: 'number', hint: 'in (0, 1]; default 0.7' }], 'input'),
  keyword: detector('Keywords', [{ name: 'keywords', label: 'Keywords', kind: 'lines', required: true, hint: 'one word or phrase a line; case-insensitive, whole words' }]),
  regex: detector('Regular expressions', [
    { name: 'patterns', label: 'Patterns', kind: 'lines', required: true, hint: 'one JavaScript regular expression a line; refused if it could backtrack catastrophically' },
    { name: 'case_insensitive', label: 'Case-insensitive', kind: 'flag' },
    { name: 'max_match_length', label: 'Longest match (characters)', kind: 'number', hint: 'for the stream look-behind; default 256' },
  ]),
  json_schema: { label: 'Answers invalid against the JSON schema asked for', fields: [], actions: ['block', 'flag'], sides: ['output'], defaultSide: 'output' },
  moderation: {
    label: 'Moderation model',
    fields: [
      { name: 'model', label: 'Classifier model', kind: 'text', required: true, hint: 'a route or <provider>/<model>, e.g. openai/gpt-4o-mini' },
      { name: 'categories', label: 'Categories', kind: 'lines', hint: 'one a line; default: hate, harassment, violence, self-harm, …' },
      { name: 'timeout_ms', label: 'Timeout (ms)', kind: 'number', hint: 'default 5000' },
      { name: 'on_error', label: 'When the classifier fails', kind: 'select', options: ['allow', 'block'], hint: 'default: allow (fail open)' },
      { name: 'max_chars', label: 'Characters sent', kind: 'number', hint: 'the end of the text; default 8000' },
    ],
    actions: ['block', 'flag'],
    sides: SIDES,
    defaultSide: 'input',
  },
};

/** The fields every rule has, for a kind (its actions and sides). */
export function commonFields(kind: string): FieldSpec[] {
  const spec = GUARDRAIL_KINDS[kind];
  const actions = spec?.actions ?? ACTIONS;
  return [
    { name: 'action', label: 'Action', kind: 'select', options: actions, required: true, hint: 'block refuses, redact replaces the match, flag only reports' },
    { name: 'applies_to', label: 'Applies to', kind: 'select', options: spec?.sides ?? SIDES, hint: `default: ${spec?.defaultSide ?? 'both'}` },
    ...(actions.includes('redact') ? [{ name: 'placeholder', label: 'Placeholder', kind: 'text', hint: `what a redacted match becomes; default [REDACTED:${kind}]` } satisfies FieldSpec] : []),
    { name: 'disabled', label: 'Disabled', kind: 'flag', hint: 'kept here, not applied' },
  ];
}

// ---- errors ------------------------------------------------------------------------------------------------------

/**
 * The API names a field by its path in the body (`guardrails.rules.2.patterns`); a form about rule 2 names it
 * `patterns`. A refused pattern is named by the list only (`guardrails.rules`), with the pattern in the message:
 * it goes next to the field that holds that pattern. Anything else keeps its param (the form shows it at its top).
 */
export function ruleError(error: ApiError, prefix: string, index: number, rule: Record<string, unknown>): ApiError {
  const param = error.param;
  if (!param) return error;
  const relative = (field: string) => new ApiError(error.status, error.message, field, error.code);
  if (param.startsWith(`${prefix}.${index}.`)) return relative(param.slice(`${prefix}.${index}.`.length));
  if (param === prefix) {
    const quoted = /pattern ("(?:[^"\\]|\\.)*")/.exec(error.message)?.[1];
    let pattern: string | null = null;
    try {
      pattern = quoted ? (JSON.parse(quoted) as string) : null;
    } catch {
      pattern = null;
    }
    if (pattern !== null) {
      if (Array.isArray(rule.patterns) && rule.patterns.includes(pattern)) return relative('patterns');
      if (Array.isArray(rule.custom_formats) && rule.custom_formats.some((format: { pattern?: unknown }) => format.pattern === pattern)) return relative('custom_formats');
    }
  }
  return error;
}

// ---- words -------------------------------------------------------------------------------------------------------

const list = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : []);

/** A rule's options in words, with the defaults filled in: "score ≥ 0.7", "patterns /a+b/ (case-insensitive)". */
export function ruleOptions(rule: GuardrailRule): string {
  const parts: string[] = [];
  switch (rule.kind) {
    case 'payment_card':
      parts.push(rule.require_known_iin ? 'known card brands only' : 'any number passing the Luhn check');
      break;
    case 'national_id': {
      const formats = Array.isArray(rule.formats) ? list(rule.formats) : ['us_ssn', 'uk_nino', 'es_dni'];
      const custom = Array.isArray(rule.custom_formats) ? rule.custom_formats.map((format: { name?: unknown }) => String(format.name)) : [];
      parts.push(`formats ${[...formats, ...custom].join(', ') || 'none'}`);
      break;
    }
    case 'secret':
      parts.push(Array.isArray(rule.types) ? `types ${list(rule.types).join(', ')}` : 'every secret type');
      break;
    case 'prompt_injection':
      parts.push(`score ≥ ${typeof rule.threshold === 'number' ? rule.threshold : 0.7}`);
      break;
    case 'keyword':
      parts.push(`keywords ${list(rule.keywords).map((word) => `“${word}”`).join(', ')}`);
      break;
    case 'regex':
      parts.push(`patterns ${list(rule.patterns).map((pattern) => `/${pattern}/`).join(', ')}${rule.case_insensitive ? ' (case-insensitive)' : ''}`);
      if (typeof rule.max_match_length === 'number') parts.push(`matches up to ${rule.max_match_length} characters`);
      break;
    case 'json_schema':
      parts.push('the schema of response_format');
      break;
    case 'moderation':
      parts.push(`classified by ${String(rule.model)}`);
      if (Array.isArray(rule.categories)) parts.push(`categories ${list(rule.categories).join(', ')}`);
      parts.push(`timeout ${typeof rule.timeout_ms === 'number' ? rule.timeout_ms : 5000} ms`);
      parts.push(rule.on_error === 'block' ? 'blocks when it fails (fail closed)' : 'allows when it fails (fail open)');
      if (typeof rule.max_chars === 'number') parts.push(`last ${rule.max_chars} characters`);
      break;
    default:
      break;
  }
  if (rule.action === 'redact') parts.push(`replaced by ${rule.placeholder ?? `[REDACTED:${rule.kind}]`}`);
  return parts.join(' · ');
}

/** The side a rule checks, its default said so. */
export function ruleSide(rule: GuardrailRule): string {
  return rule.applies_to ?? `${GUARDRAIL_KINDS[rule.kind]?.defaultSide ?? 'both'} (default)`;
}

/** A request log's `input:cards:blocked` -> "input: cards blocked". */
export function guardrailEntry(entry: string): string {
  const first = entry.indexOf(':');
  const last = entry.lastIndexOf(':');
  if (first < 0 || last === first) return entry;
  return `${entry.slice(0, first)}: ${entry.slice(first + 1, last)} ${entry.slice(last + 1)}`;
}
