import { gatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { quoteInput, quoteValue } from '../../core/quote-input.js';

/**
 * The types (and the ranges and value lists OpenAI's CreateResponse schema states) of the Responses request fields
 * tollgate reads or forwards, checked before any upstream call. OpenAI answers a wrong one with a 400 naming it; without
 * this check a translated request would silently lose the setting (canonicalRequest reads only values of the right
 * type) and the client would never learn its value was ignored. Checked the same whether the body is passed through
 * or translated, so a request fails alike on every provider.
 *
 * Fidelity: nothing OpenAI takes is refused. `null` is "unset" for every field here (the schema allows it for nearly
 * all, and tollgate reads null as absent), and a field not listed passes through untouched. Value lists that OpenAI
 * keeps growing (reasoning effort levels, service tiers, verbosity, include values, hosted tool types) are checked as
 * strings only: a closed list would refuse the next value OpenAI adds, and an unknown one is still the provider's to
 * judge. Only lists that are fixed are closed: the deprecated `truncation`, and `tool_choice`'s modes.
 */

/** Checks one present, non-null value; throws the 400 naming `param`. */
type Check = (value: unknown, param: string) => void;
/** A field of an object, its check, and whether it must be there. */
type Rule = readonly [field: string, check: Check, required?: 'required'];

/** A value's JSON type in OpenAI's words ("but got a string instead"). */
function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a decimal';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function wrongType(param: string, expected: string, value: unknown): never {
  throw gatewayError('invalid_type', `Invalid type for '${param}': expected ${expected}, but got ${jsonType(value)} instead.`, { param });
}

/** `got`: what was sent, as the message shows it. */
function wrongValue(param: string, expected: string, got: string): never {
  throw gatewayError('invalid_value', `Invalid value for '${param}': expected ${expected}, but got ${got} instead.`, { param });
}

/** A client's value for a message: a string quoted, anything else as JSON; bounded either way. */
function shown(value: unknown): string {
  return typeof value === 'string' ? `'${quoteInput(value)}'` : quoteValue(value);
}

/** Each rule's field of `object`, named `${prefix}${field}`; an absent or null one is skipped unless required. */
function checkRules(object: Record<string, unknown>, prefix: string, rules: readonly Rule[]): void {
  for (const [field, check, required] of rules) {
    const value = object[field];
    const param = `${prefix}${field}`;
    if (value !== undefined && value !== null) check(value, param);
    else if (required) throw gatewayError('missing_required_parameter', `Missing required parameter: '${param}'.`, { param });
  }
}

const boolean: Check = (value, param) => {
  if (typeof value !== 'boolean') wrongType(param, 'a boolean', value);
};

function string(limits: { maxLength?: number; oneOf?: readonly string[] } = {}): Check {
  const { maxLength, oneOf } = limits;
  const listed = oneOf?.map((item) => `'${item}'`).join(', ');
  return (value, param) => {
    if (typeof value !== 'string') return wrongType(param, 'a string', value);
    if (maxLength !== undefined && value.length > maxLength) wrongValue(param, `a string of at most ${maxLength} characters`, `${value.length} characters`);
    if (oneOf && !oneOf.includes(value)) wrongValue(param, `one of ${listed}`, shown(value));
  };
}

/** A number in [min, max]; `integer` refuses a fraction as OpenAI does (its type error, "got a decimal"). */
function number(min: number, max: number, integer = false): Check {
  const kind = integer ? 'an integer' : 'a number';
  const range = max === Infinity ? `${kind} greater than or equal to ${min}` : `${kind} from ${min} to ${max}`;
  return (value, param) => {
    if (typeof value !== 'number' || (integer && !Number.isInteger(value))) return wrongType(param, kind, value);
    if (value < min || value > max) wrongValue(param, range, shown(value));
  };
}

/** An object whose listed fields are checked too (named `param.field`). */
function object(rules: readonly Rule[] = []): Check {
  return (value, param) => {
    if (!isRecord(value)) return wrongType(param, 'an object', value);
    checkRules(value, `${param}.`, rules);
  };
}

/** An array whose items are each checked (named `param[i]`). */
function arrayOf(item: Check, expected: string): Check {
  return (value, param) => {
    if (!Array.isArray(value)) return wrongType(param, expected, value);
    value.forEach((entry: unknown, i) => item(entry, `${param}[${i}]`));
  };
}

/** Metadata: a map of strings (OpenAI's `Metadata`), each value named `metadata.<key>`. */
const stringMap: Check = (value, param) => {
  if (!isRecord(value)) return wrongType(param, 'an object of string values', value);
  for (const [key, entry] of Object.entries(value)) if (typeof entry !== 'string') wrongType(`${param}.${quoteInput(key, 64)}`, 'a string', entry);
};

const anyString = string();

/**
 * The fields each kind of tool_choice object needs (ToolChoiceParam). A hosted tool's type (file_search, web_search,
 * ...) needs only its type, and a type not listed here is left to the provider, as new ones keep coming.
 */
const TOOL_CHOICE_FIELDS: ReadonlyMap<unknown, readonly Rule[]> = new Map([
  ['function', [['name', anyString, 'required']]],
  ['custom', [['name', anyString, 'required']]],
  ['mcp', [['server_label', anyString, 'required'], ['name', anyString]]],
  [
    'allowed_tools',
    [
      ['mode', string({ oneOf: ['auto', 'required'] }), 'required'],
      ['tools', arrayOf(object(), 'an array of tool objects'), 'required'],
    ],
  ],
] satisfies [string, Rule[]][]);

const toolChoiceMode = string({ oneOf: ['none', 'auto', 'required'] });

/** `tool_choice`: a mode, or an object naming a tool by its `type` (and the fields that type needs). */
const toolChoice: Check = (value, param) => {
  if (typeof value === 'string') return toolChoiceMode(value, param);
  if (!isRecord(value)) return wrongType(param, "a string ('none', 'auto' or 'required') or an object with a 'type'", value);
  checkRules(value, `${param}.`, [['type', anyString, 'required']]);
  const rules = TOOL_CHOICE_FIELDS.get(value.type);
  if (rules) checkRules(value, `${param}.`, rules);
};

/** The checked fields of a Responses request body (CreateResponse), by name. */
const FIELDS: readonly Rule[] = [
  ['background', boolean],
  ['include', arrayOf(anyString, 'an array of strings')],
  ['instructions', anyString],
  // At least 1, as before: the spec's minimum is 16, but a smaller limit works on translated providers (a length stop).
  ['max_output_tokens', number(1, Infinity, true)],
  ['metadata', stringMap],
  ['parallel_tool_calls', boolean],
  // Read by tollgate itself (a stored conversation): another type would be a turn without its history.
  ['previous_response_id', anyString],
  ['prompt_cache_key', anyString],
  ['reasoning', object([['effort', anyString], ['summary', anyString]])],
  ['safety_identifier', string({ maxLength: 64 })],
  ['service_tier', anyString],
  ['store', boolean],
  ['stream', boolean],
  ['temperature', number(0, 2)],
  ['text', object([['verbosity', anyString]])],
  ['tool_choice', toolChoice],
  ['tools', arrayOf(object(), 'an array of tool objects')],
  ['top_logprobs', number(0, 20, true)],
  ['top_p', number(0, 1)],
  ['truncation', string({ oneOf: ['auto', 'disabled'] })],
  ['user', anyString],
];

/** Throws OpenAI's 400 for the first documented field of a Responses body with a value OpenAI would refuse. */
export function checkResponsesFields(body: Record<string, unknown>): void {
  checkRules(body, '', FIELDS);
}
