import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// An assistant turn handed back goes upstream with text outside its content: a legacy function call's arguments
// (agents on the `functions` parameter), a refusal (a field or a content part) and reasoning (`reasoning_content`).
// Input rules read only content, text parts and tool_calls, so those carried what a rule blocks or redacts upstream.

const CARD = '4111 1111 1111 1111';
const functions = [{ name: 'send_mail', parameters: { type: 'object', properties: { to: { type: 'string' } } } }];

let upstream: ScriptedUpstream;
let tg: RunningGateway;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    guardrails: {
      rules: [
        { name: 'emails', kind: 'email', action: 'redact', applies_to: 'input' },
        { name: 'cards', kind: 'payment_card', action: 'block', applies_to: 'input' },
      ],
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
afterEach(() => upstream.reset());

/** A conversation whose earlier assistant turns hold `secret` outside their content, at each place in turn. */
function history(secret: string): OpenAI.ChatCompletionMessageParam[] {
  return [
    { role: 'user', content: 'mail jane' },
    { role: 'assistant', content: null, function_call: { name: 'send_mail', arguments: JSON.stringify({ to: secret }) } },
    { role: 'function', name: 'send_mail', content: 'sent' },
    { role: 'assistant', content: 'ok', refusal: `no, not ${secret}` },
    { role: 'assistant', content: [{ type: 'refusal', refusal: `I will not write to ${secret}` }] },
    { role: 'assistant', content: 'done', reasoning_content: `the user means ${secret}` } as OpenAI.ChatCompletionAssistantMessageParam,
    { role: 'user', content: 'thanks' },
  ];
}

describe('input rules on an assistant turn handed back', () => {
  it('redact what goes upstream in a legacy function call, a refusal and reasoning', async () => {
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', functions, messages: history('jane.doe@example.com') });
    expect(answer.choices[0]?.message.content).toBe('echo: thanks');
    const sent = JSON.stringify(upstream.calls[0]?.body.messages);
    expect(sent).not.toContain('jane.doe@example.com');
    const messages = upstream.calls[0]?.body.messages as Array<Record<string, any>>;
    expect(messages[1]?.function_call).toEqual({ name: 'send_mail', arguments: '{"to":"[REDACTED:email]"}' });
    expect(messages[3]?.refusal).toBe('no, not [REDACTED:email]');
    expect(messages[4]?.content).toEqual([{ type: 'refusal', refusal: 'I will not write to [REDACTED:email]' }]);
    expect(messages[5]?.reasoning_content).toBe('the user means [REDACTED:email]');
  });

  it('block a request whose legacy function call holds what a block rule refuses, naming where', async () => {
    const refused = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', functions, messages: history(CARD).slice(0, 3) }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refused).toMatchObject({ status: 400, code: 'guardrail_blocked', param: 'messages[1].function_call.arguments' });
    expect(upstream.calls).toHaveLength(0);
  });

  it.each(['refusal', 'reasoning_content'])('block a request whose assistant %s holds it', async (field) => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'pay' },
      { role: 'assistant', content: 'ok', [field]: `card ${CARD}` } as OpenAI.ChatCompletionAssistantMessageParam,
      { role: 'user', content: 'again' },
    ];
    const refused = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toMatchObject({ status: 400, code: 'guardrail_blocked', param: `messages[1].${field}` });
    expect(upstream.calls).toHaveLength(0);
  });
});
