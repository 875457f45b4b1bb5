import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

/**
 * Checks a value against one of OpenAI's published response schemas, vendored (with their provenance) in
 * test/fixtures/openai-schemas.json by scripts/vendor-openai-schemas.ts.
 */

export type OpenAISchemaName =
  | 'CreateChatCompletionResponse'
  | 'CreateChatCompletionStreamResponse'
  | 'ErrorResponse'
  | 'CreateEmbeddingResponse'
  | 'ListModelsResponse'
  | 'Model';

const SCHEMA_ID = 'https://tollgate.test/openai-schemas.json';

interface Vendored {
  'x-provenance': { commit: string; version: string };
  $defs: Record<string, unknown>;
}

const vendored = JSON.parse(readFileSync(new URL('../fixtures/openai-schemas.json', import.meta.url), 'utf8')) as Vendored;

/** Where the schemas come from: the openai/openai-openapi commit and the document's version. */
export const openAISchemaProvenance = vendored['x-provenance'];

// ajv-formats is CommonJS: its default export arrives as the module object or the function, depending on the loader.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

// A keyword ajv does not know is an error in the vendored file, not something silently left unchecked. OpenAI's
// schemas are not written to ajv's stricter style rules (`required` without `type: object`), which are off.
const ajv = new Ajv2020({ strictSchema: true, strictTypes: false, strictTuples: false, strictRequired: false, allErrors: true });
addFormats(ajv);
// OpenAI's own format for timestamps: Unix seconds.
ajv.addFormat('unixtime', { type: 'number', validate: (value: number) => Number.isInteger(value) && value >= 0 });
ajv.addSchema({ $id: SCHEMA_ID, $defs: vendored.$defs });

const validators = new Map<string, ValidateFunction>();

function validatorFor(name: OpenAISchemaName): ValidateFunction {
  let validate = validators.get(name);
  if (!validate) {
    validate = ajv.getSchema(`${SCHEMA_ID}#/$defs/${name}`);
    if (!validate) throw new Error(`No vendored OpenAI schema ${name}; add it to scripts/vendor-openai-schemas.ts`);
    validators.set(name, validate);
  }
  return validate;
}

/** Throws, naming every field that does not match, unless `value` matches OpenAI's schema `name`. */
export function assertMatchesOpenAISchema(name: OpenAISchemaName, value: unknown): void {
  const validate = validatorFor(name);
  if (validate(value)) return;
  const problems = (validate.errors ?? []).map((error) => `  ${error.instancePath || '(root)'} ${error.message ?? ''} ${JSON.stringify(error.params)}`);
  throw new Error(`Not a valid OpenAI ${name} (openai-openapi ${openAISchemaProvenance.version}):\n${problems.join('\n')}\nvalue: ${JSON.stringify(value).slice(0, 2_000)}`);
}
