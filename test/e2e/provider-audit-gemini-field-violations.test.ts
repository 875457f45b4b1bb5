import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

/**
 * A Gemini BadRequest's `fieldViolations` name the wrong field; an OpenAI client reads it as the error's `param`. A
 * violation of the body itself (an unknown top-level name) comes first without a field (proto JSON leaves the empty
 * string out), so `param` is the first field named: on a whole answer, on a stream refused before it began, and on an
 * error event in the middle of a stream, under /v1 and /litellm alike.
 */

let gemini: GeminiUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' } },
  });
}, 30_000);
afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
});
beforeEach(() => gemini.reset());

const GOOGLE_ERROR = {
  code: 400,
  message: 'Invalid JSON payload received. Unknown name "foo": Cannot find field.\nInvalid JSON payload received. Unknown name "bar" at \'generation_config\': Cannot find field.',
  status: 'INVALID_ARGUMENT',
  details: [
    {
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [
        { description: 'Invalid JSON payload received. Unknown name "foo": Cannot find field.' },
        { field: 'generation_config', description: 'Invalid JSON payload received. Unknown name "bar" at \'generation_config\': Cannot find field.' },
      ],
    },
  ],
};

const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

function refuseWithBody(): void {
  gemini.enqueue({ kind: 'raw', status: 400, headers: { 'content-type': 'application/json; charset=UTF-8' }, body: JSON.stringify({ error: GOOGLE_ERROR }) });
}

async function failure(run: () => Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await run().then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _chunk of stream) {
    // Read to the end (or the error).
  }
}

describe("a Gemini BadRequest whose first violation names no field", () => {
  for (const base of ['/v1', '/litellm']) {
    it(`is the param of the first field named, whole and streamed (${base})`, async () => {
      const client = new OpenAI({ baseURL: `${tg.url}${base}`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
      refuseWithBody();
      const whole = await failure(() => client.chat.completions.create({ model: 'gemini/gemini-2.5-flash', messages: hi }));
      expect(whole.status).toBe(400);
      expect(whole.code).toBe('INVALID_ARGUMENT');
      expect(whole.param).toBe('generation_config');

      refuseWithBody();
      const beforeStream = await failure(async () => drain(await client.chat.completions.create({ model: 'gemini/gemini-2.5-flash', messages: hi, stream: true })));
      expect(beforeStream.status).toBe(400);
      expect(beforeStream.param).toBe('generation_config');

      gemini.enqueue({ kind: 'stream-error', chunks: 1, error: GOOGLE_ERROR });
      const midStream = await failure(async () => drain(await client.chat.completions.create({ model: 'gemini/gemini-2.5-flash', messages: hi, stream: true })));
      expect(midStream.param).toBe('generation_config');
      expect(midStream.code).toBe('INVALID_ARGUMENT');
    });
  }
});
