import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// The README's own card rule (`{ kind: payment_card, action: block }`) against what developers paste into prompts:
// log lines full of epoch timestamps and IDs. One such number in ten passes the Luhn check; none is a card.

let upstream: ScriptedUpstream;
let tg: RunningGateway;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    guardrails: { rules: [{ name: 'cards', kind: 'payment_card', action: 'block' }] },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

const LOG = [
  '{"ts":1732838471271,"level":"error","msg":"upstream timeout","user_id":"1311261233246469788"}',
  '{"ts":1732838534623,"level":"warn","span":"1732838400123456789","job":"export-20241129054413"}',
].join('\n');

describe('numbers that are not cards', () => {
  it('lets a pasted log with epoch timestamps and Snowflake IDs through unchanged', async () => {
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: `Why does this fail?\n${LOG}` }] });
    expect(answer.choices[0]?.message.content).toBe(`echo: Why does this fail?\n${LOG}`);
    expect(upstream.calls.at(-1)?.body.messages[0].content).toBe(`Why does this fail?\n${LOG}`);
  });

  it('still refuses a card number in the same log', async () => {
    const error = await tg.client.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: `${LOG}\n{"card":"4111 1111 1111 1111"}` }] })
      .then(() => null, (err: { status?: number; code?: string }) => err);
    expect(error).toMatchObject({ status: 400, code: 'guardrail_blocked' });
  });
});
