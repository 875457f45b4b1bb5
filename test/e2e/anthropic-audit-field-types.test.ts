import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAnthropicRig, type AnthropicRig } from '../helpers/anthropic-rig.js';

// Fields only a translation reads (metadata.user_id as the user, output_config / output_format as response_format),
// sent with the wrong type: Anthropic refuses them with a 400; translated, they were silently no value and the
// request was answered, so the same body was refused or served depending on the provider behind the model.

let rig: AnthropicRig;

beforeAll(async () => {
  rig = await startAnthropicRig();
});

afterAll(async () => {
  await rig?.stop();
});

beforeEach(() => rig.reset());

const MALFORMED: Array<[string, Record<string, unknown>]> = [
  ['metadata.user_id', { metadata: { user_id: 42 } }],
  ['output_config', { output_config: 'json' }],
  ['output_config.format', { output_config: { format: 'json' } }],
  ['output_format', { output_format: 5 }],
];

describe('a field of the wrong type', () => {
  it.each(MALFORMED)('%s is a 400 invalid_request_error naming it, whichever provider serves the model', async (name, extra) => {
    for (const model of ['openai/gpt-4o', 'anthropic/claude-sonnet-4-5']) {
      const res = await rig.post({ model, max_tokens: 50, messages: [{ role: 'user', content: 'hello' }], ...extra });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { type: string; error: { type: string; message: string } };
      expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      expect(body.error.message.startsWith(`${name}:`)).toBe(true);
    }
    expect(rig.openai.calls).toHaveLength(0);
    expect(rig.upstream.calls).toHaveLength(0);
  });
});
