import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAnthropicRig, type AnthropicRig } from '../helpers/anthropic-rig.js';

// Anthropic's structured outputs were first asked for by a top-level `output_format` (the structured-outputs beta);
// `output_config.format` replaced it, and Anthropic still takes the old field, which older SDKs and raw clients send.
// Translated to another format, either must become the target's JSON-schema response format, never vanish.

let rig: AnthropicRig;

beforeAll(async () => {
  rig = await startAnthropicRig();
});

afterAll(async () => {
  await rig?.stop();
});

beforeEach(() => rig.reset());

const SCHEMA = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false };

describe('output_format (deprecated structured outputs) on a translated request', () => {
  it('reaches an OpenAI model as a json_schema response_format, and the answer is JSON', async () => {
    const res = await rig.post({ model: 'openai/gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'answer in JSON' }], output_format: { type: 'json_schema', schema: SCHEMA } });
    expect(res.status).toBe(200);
    const message = (await res.json()) as { content: Array<{ type: string; text: string }> };
    expect(rig.openai.calls.at(-1)?.body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'output', schema: SCHEMA } });
    expect(JSON.parse(message.content[0]?.text ?? '')).toEqual({ echo: 'answer in JSON' });
  });

  it('streams the same way', async () => {
    const res = await rig.post({ model: 'openai/gpt-4o', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'answer in JSON' }], output_format: { type: 'json_schema', schema: SCHEMA } });
    expect(res.status).toBe(200);
    await res.text();
    expect(rig.openai.calls.at(-1)?.body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'output', schema: SCHEMA } });
  });

  it('without a schema is a 400 naming output_format.schema, in Anthropic shape', async () => {
    const res = await rig.post({ model: 'openai/gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'x' }], output_format: { type: 'json_schema' } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('output_format.schema') } });
    expect(rig.openai.calls).toHaveLength(0);
  });
});
