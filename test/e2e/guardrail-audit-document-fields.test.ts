import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAnthropicRig, type AnthropicRig } from '../helpers/anthropic-rig.js';

/**
 * Input rules on /anthropic to an Anthropic provider (the client's own body goes upstream) read a document's `title`
 * and `context`: Anthropic passes both to the model ("passed to the model but not used towards cited content"), but
 * the canonical request has no place for them, so the rules never saw them and they went upstream as written.
 */
let rig: AnthropicRig;
const EMAIL = 'jane.doe@example.com';
const MODEL = 'anthropic/claude-sonnet-4-5';

beforeAll(async () => {
  rig = await startAnthropicRig({
    guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact' }, { name: 'deny', kind: 'keyword', keywords: ['project zephyr'], action: 'block' }] },
  });
});
afterAll(() => rig?.stop());
beforeEach(() => rig.reset());

function document(title: string, context: string): Anthropic.DocumentBlockParam {
  return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'The quarterly plan.' }, title, context };
}

describe('/anthropic input rules and a document title and context', () => {
  it('redacts an email in a document title and context before it goes upstream', async () => {
    const message = await rig.client.messages.create({
      model: MODEL,
      max_tokens: 50,
      messages: [{ role: 'user', content: [document(`Notes from ${EMAIL}`, `Send questions to ${EMAIL}`), { type: 'text', text: 'Summarize it.' }] }],
    });
    expect(message.type).toBe('message');
    const sent = rig.lastCall();
    expect(sent.raw).not.toContain(EMAIL);
    const block = sent.body.messages[0].content[0];
    expect(block.title).toBe('Notes from [REDACTED:email]');
    expect(block.context).toBe('Send questions to [REDACTED:email]');
    expect(block.source).toEqual({ type: 'text', media_type: 'text/plain', data: 'The quarterly plan.' });
  });

  it('refuses a request whose document context holds a blocked word, in Anthropic error shape, nothing sent', async () => {
    const error = await rig.client.messages
      .create({
        model: MODEL,
        max_tokens: 50,
        messages: [{ role: 'user', content: [document('Plan', 'Internal: project zephyr'), { type: 'text', text: 'Summarize it.' }] }],
      })
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.BadRequestError>).message).toContain("guardrail 'deny'");
    expect(rig.upstream.calls).toHaveLength(0);
  });

  it('redacts an email in the title of a document a tool result answered with', async () => {
    await rig.client.messages.create({
      model: MODEL,
      max_tokens: 50,
      tools: [{ name: 'fetch_doc', description: 'Fetch a document', input_schema: { type: 'object', properties: {} } }],
      messages: [
        { role: 'user', content: 'Fetch the plan.' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01Doc', name: 'fetch_doc', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01Doc', content: [document(`Owner ${EMAIL}`, 'none')] }] },
      ],
    });
    const sent = rig.lastCall();
    expect(sent.raw).not.toContain(EMAIL);
    expect(sent.body.messages[2].content[0].content[0].title).toBe('Owner [REDACTED:email]');
  });
});
