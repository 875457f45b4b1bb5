import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

/**
 * /anthropic count_tokens asks Anthropic to count a direct Anthropic model's prompt, with the client's body. Input
 * guardrails act in the pipeline, which a count does not run: with a rule that blocks or redacts, the body would
 * leave through the count (Claude Code counts before its turns). Such a count is estimated by the gateway instead,
 * and the body never goes upstream.
 */

const CARD = '4111 1111 1111 1111';
let upstream: AnthropicUpstream;
let guarded: RunningGateway;
let open: RunningGateway;

beforeAll(async () => {
  upstream = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  const providers = { anthropic: { base_url: `${upstream.url}/v1`, api_key: 'sk-ant-upstream' } };
  guarded = await startGateway({ providers, guardrails: { rules: [{ name: 'cards', kind: 'payment_card', action: 'block', applies_to: 'input' }] } });
  open = await startGateway({ providers });
});
afterAll(async () => {
  await guarded.stop();
  await open.stop();
  await upstream.close();
});
beforeEach(() => upstream.reset());

const counts = (): number => upstream.calls.filter((call) => call.path.includes('count_tokens')).length;
const messages: Anthropic.MessageParam[] = [{ role: 'user', content: `my card is ${CARD}, please remember it` }];

describe('count_tokens and input guardrails', () => {
  it('estimates the count, sending nothing upstream, when a rule at the top level blocks or redacts input', async () => {
    const client = new Anthropic({ baseURL: `${guarded.url}/anthropic`, apiKey: 'x', maxRetries: 0 });
    const counted = await client.messages.countTokens({ model: 'anthropic/claude-sonnet-4-5', messages });
    expect(counted.input_tokens).toBeGreaterThan(5);
    expect(counts()).toBe(0);
    expect(JSON.stringify(upstream.calls)).not.toContain('4111');
  });

  it("does the same for a key whose own rules redact input, and asks Anthropic for everyone else's", async () => {
    const created = await jsonRequest(open.url, 'POST', '/api/keys', { name: 'redacting', guardrails: { rules: [{ name: 'cards', kind: 'payment_card', action: 'redact', applies_to: 'input' }] } });
    expect(created.status).toBe(201);
    const keyed = new Anthropic({ baseURL: `${open.url}/anthropic`, apiKey: (created.body as { key: string }).key, maxRetries: 0 });
    await keyed.messages.countTokens({ model: 'anthropic/claude-sonnet-4-5', messages });
    expect(counts()).toBe(0);

    // Without such a rule the count is Anthropic's (the scripted Messages upstream does not serve count_tokens and
    // answers 404: the call reached it).
    const anonymous = new Anthropic({ baseURL: `${open.url}/anthropic`, apiKey: 'x', maxRetries: 0 });
    await anonymous.messages.countTokens({ model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'hello' }] }).catch(() => undefined);
    expect(counts()).toBe(1);
  });
});
