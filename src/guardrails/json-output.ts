import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { RegExpLike } from 'ajv/dist/types/index.js';
import { Ajv } from 'ajv';
import { backtrackingRisk, DEFAULT_MAX_REPEAT, MAX_PATTERN_LENGTH } from './detectors/regex-list.js';
import { tradedRepetitions } from './detectors/traded-repetitions.js';

/**
 * Compiled validators by schema text: a client sends the same schema again and again. At most MAX_VALIDATORS are
 * kept, and schema texts of at most MAX_KEPT_CHARS characters in all: a schema may carry megabytes of text (a long
 * `description`), and 200 of those kept as keys were gigabytes.
 */
const MAX_VALIDATORS = 200;
const MAX_KEPT_CHARS = 16 * 1024 * 1024;
const validators = new Map<string, ValidateFunction | Error>();
let keptChars = 0;

/**
 * The most objects a schema may hold (subschemas and the maps of them, `properties` and the like) to be compiled. ajv
 * compiles on the event loop at about a millisecond an object (a 20 MB body could hold a schema that takes minutes,
 * every other request waiting): past this bound the schema is not compiled, and the answer passes unchecked, as for
 * a schema that does not compile. About 200 plain properties (fewer nested ones): compiled in some 0.1-0.3 s at most.
 */
export const MAX_SCHEMA_OBJECTS = 200;

/** Whether `schema` holds more than MAX_SCHEMA_OBJECTS objects (counted until that many are found). */
function tooLarge(schema: Record<string, unknown>): boolean {
  const stack: unknown[] = [schema];
  let objects = 0;
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value !== 'object' || value === null) continue;
    if (!Array.isArray(value) && ++objects > MAX_SCHEMA_OBJECTS) return true;
    for (const item of Array.isArray(value) ? value : Object.values(value)) if (typeof item === 'object' && item !== null) stack.push(item);
  }
  return false;
}

/** The longest string a client's `pattern` is tested on (see clientPattern): at most some tens of milliseconds. */
export const MAX_PATTERN_SUBJECT = 10_000;

/**
 * A regular expression of a client's schema (`pattern`, `patternProperties`), run over the model's answer on the event
 * loop: one that tollgate would refuse from an operator (see compilePattern) because a near-miss backtracks for ever
 * (`^(a+)+$` on 40 letters and a `!` is hours) is refused here too. The schema then does not compile, and the answer
 * passes unchecked, as for any schema that cannot be compiled: a client's schema may cost only its own check. What is
 * left can still cost the square of a string's length (`[a-z]+-\d+` tries every start of a long run of letters: 4.6 s
 * on 100,000 of them), so a string longer than MAX_PATTERN_SUBJECT characters is not tested (taken as matching).
 */
function clientPattern(pattern: string, flags: string): RegExpLike & { toString(): string } {
  const re = new RegExp(pattern, flags);
  const risk =
    pattern.length > MAX_PATTERN_LENGTH
      ? `longer than ${MAX_PATTERN_LENGTH} characters`
      : (backtrackingRisk(pattern) ?? (tradedRepetitions(pattern, false, DEFAULT_MAX_REPEAT) !== null ? 'repetitions in a row that can match the same characters' : null));
  if (risk !== null) throw new Error(`pattern ${JSON.stringify(pattern.slice(0, 80))} is not run: ${risk}`);
  // ajv keeps one value per `toString()` in an instance: it must name the expression, as a RegExp's does.
  return { test: (subject: string) => subject.length > MAX_PATTERN_SUBJECT || re.test(subject), toString: () => re.toString() };
}
clientPattern.code = 'new RegExp';

/**
 * The ajv instances schemas are compiled with, replaced after MAX_VALIDATORS compilations. An instance keeps every
 * schema it compiled (and each `$id` inside one) for as long as it lives, whatever `validators` forgets: one instance
 * for the process grew by some 25 KB with each new schema a client sent. A retired instance goes once the validators
 * it compiled have left `validators`. `addUsedSchema: false`: a schema's `$id` is not registered, so a client's schema
 * never makes another's with the same `$id` uncompilable (and so unchecked). `logger: false`: a schema that fails to
 * compile would otherwise have ajv write its whole generated code (megabytes for a large schema) to the console.
 */
const OPTIONS = { strict: false, allErrors: false, validateSchema: false, addUsedSchema: false, logger: false, code: { regExp: clientPattern } } as const;
let engines: { draft7: Ajv; draft2020: Ajv2020; compiled: number; chars: number } | null = null;

/** The instance to compile `schema` (`chars` characters of JSON) with: a new one once the last compiled its share. */
function engineFor(schema: Record<string, unknown>, chars: number): Ajv | Ajv2020 {
  if (!engines || engines.compiled >= MAX_VALIDATORS || engines.chars >= MAX_KEPT_CHARS) engines = { draft7: new Ajv(OPTIONS), draft2020: new Ajv2020(OPTIONS), compiled: 0, chars: 0 };
  engines.compiled++;
  engines.chars += chars;
  return typeof schema.$schema === 'string' && schema.$schema.includes('2020-12') ? engines.draft2020 : engines.draft7;
}

/** The JSON Schema a request's `response_format` asks the answer to follow, or null when it asks for none. */
export function requestedSchema(responseFormat: unknown): Record<string, unknown> | null {
  if (typeof responseFormat !== 'object' || responseFormat === null) return null;
  const format = responseFormat as { type?: unknown; json_schema?: { schema?: unknown } };
  if (format.type !== 'json_schema') return null;
  const schema = format.json_schema?.schema;
  return typeof schema === 'object' && schema !== null && !Array.isArray(schema) ? (schema as Record<string, unknown>) : null;
}

const TOO_LARGE = new Error(`the schema holds more than ${MAX_SCHEMA_OBJECTS} objects`);

function validatorFor(schema: Record<string, unknown>): ValidateFunction | Error {
  // Counted before anything else is done with it (the walk stops at the bound): nothing of a schema too large is kept.
  if (tooLarge(schema)) return TOO_LARGE;
  const text = JSON.stringify(schema);
  let found = validators.get(text);
  if (!found) {
    try {
      found = engineFor(schema, text.length).compile(schema);
    } catch (err) {
      found = err instanceof Error ? err : new Error(String(err));
    }
    while (validators.size > 0 && (validators.size >= MAX_VALIDATORS || keptChars + text.length > MAX_KEPT_CHARS)) {
      const oldest = validators.keys().next().value as string;
      validators.delete(oldest);
      keptChars -= oldest.length;
    }
    validators.set(text, found);
    keptChars += text.length;
  }
  return found;
}

/** Why an answer's text is not valid against the schema, or null when it is (a schema ajv cannot compile passes). */
export function schemaProblem(schema: Record<string, unknown>, text: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'the answer is not JSON';
  }
  const validate = validatorFor(schema);
  if (validate instanceof Error) return null;
  if (validate(value)) return null;
  const first = validate.errors?.[0];
  return first ? `${first.instancePath || '/'} ${first.message ?? 'is invalid'}` : 'the answer does not match the schema';
}
