import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../helpers/gateway.js';
import { startThreeUpstreams, type ThreeUpstreams } from '../helpers/three-upstreams.js';
import type { AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import type { GeminiUpstream } from '../upstream/gemini-upstream.js';
import type { ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Issue 14: numbers the client sent reach the upstream digit for digit. The bodies are sent raw: a JavaScript SDK
 * cannot even hold 9223372036854775807, while clients in other languages (Python, Go, Java) send it as is.
 */
let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;

let rig: ThreeUpstreams | undefined;
beforeAll(async () => {
  rig = await startThreeUpstreams({ routing: { retry: { max_attempts: 1 } } });
  ({ openai, anthropic, gemini, tg } = rig);
}, 30_000);
afterAll(async () => {
  await rig?.stop();
});
beforeEach(() => rig?.reset());

function post(path: string, text: string): Promise<Response> {
  return fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
}

describe('numbers reach the upstream digit for digit', () => {
  it('OpenAI: seed and a number deep in a tool schema', async () => {
    const text =
      '{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi 12345678901234567890"}],"seed":9223372036854775807,' +
      '"temperature":0.7,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"n":{"type":"integer","maximum":18446744073709551615}}}}}]}';
    const res = await post('/v1/chat/completions', text);
    expect(res.status).toBe(200);
    const raw = openai.calls.at(-1)!.raw!;
    expect(raw).toContain('"seed":9223372036854775807');
    expect(raw).toContain('"maximum":18446744073709551615');
    expect(raw).toContain('"content":"hi 12345678901234567890"');
    expect(raw).toContain('"temperature":0.7');
    expect(raw).not.toContain('tollgate-exact-number');
  });

  it('OpenAI, streamed, and the common path unchanged', async () => {
    const res = await post('/v1/chat/completions', '{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}],"seed":-9223372036854775808}');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('[DONE]');
    expect(openai.calls.at(-1)!.raw).toContain('"seed":-9223372036854775808');
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], seed: 12345 });
    expect(openai.calls.at(-1)!.raw).toContain('"seed":12345');
  });

  it('Anthropic pass-through: a big integer in metadata and in a tool input', async () => {
    const text =
      '{"model":"anthropic/claude-haiku-4-5","max_tokens":64,"metadata":{"user_id":"u"},' +
      '"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"f","input":{"n":123456789012345678901234}}]},' +
      '{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"ok"}]}],' +
      '"tools":[{"name":"f","input_schema":{"type":"object","properties":{"n":{"type":"integer","maximum":99999999999999999999}}}}]}';
    const res = await post('/anthropic/v1/messages', text);
    expect(res.status).toBe(200);
    const raw = anthropic.calls.at(-1)!.raw!;
    expect(raw).toContain('"input":{"n":123456789012345678901234}');
    expect(raw).toContain('"maximum":99999999999999999999');
  });

  it('Gemini: a seed past int32 reaches Gemini as written, for Gemini to judge, not dropped', async () => {
    await post('/v1/chat/completions', '{"model":"gemini/gemini-2.0-flash","messages":[{"role":"user","content":"hi"}],"seed":9223372036854775807}');
    expect(gemini.calls.at(-1)!.raw).toContain('"seed":9223372036854775807');
  });

  it('Gemini: the seed and a big number in a tool schema, translated from the OpenAI request', async () => {
    // Gemini's seed is an int32, so its largest seed is what a client can meaningfully send; it reaches Gemini as is.
    const res = await post('/v1/chat/completions', '{"model":"gemini/gemini-2.0-flash","messages":[{"role":"user","content":"hi"}],"seed":2147483647,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"n":{"type":"integer","maximum":18446744073709551615}}}}}]}');
    expect(res.status).toBe(200);
    const raw = gemini.calls.at(-1)!.raw!;
    expect(raw).toContain('"seed":2147483647');
    expect(raw).toContain('"maximum":18446744073709551615');
    expect(raw).not.toContain('tollgate-exact-number');
  });

  it('Gemini route: a big integer in a function call\'s args and in a response schema reach Gemini as sent', async () => {
    const text =
      '{"contents":[{"role":"user","parts":[{"text":"order?"}]},{"role":"model","parts":[{"functionCall":{"name":"lookup","args":{"order_id":12345678901234567890123}}}]},' +
      '{"role":"user","parts":[{"functionResponse":{"name":"lookup","response":{"total":-98765432109876543210}}}]}],' +
      '"generationConfig":{"seed":42,"responseMimeType":"application/json","responseSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":18446744073709551615}}}}}';
    const res = await post('/genai/v1beta/models/gemini-2.0-flash:generateContent?key=client-side-key', text);
    expect(res.status).toBe(200);
    const raw = gemini.calls.at(-1)!.raw!;
    expect(raw).toContain('"order_id":12345678901234567890123');
    expect(raw).toContain('"total":-98765432109876543210');
    expect(raw).toContain('18446744073709551615');
    expect(raw).toContain('"seed":42');
    expect(raw).not.toContain('tollgate-exact-number');
  });

  it('Anthropic route to an OpenAI upstream: a tool input becomes arguments text with the digits in it', async () => {
    const text =
      '{"model":"openai/gpt-4o-mini","max_tokens":64,' +
      '"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"f","input":{"n":123456789012345678901234,"big":1e400}}]},' +
      '{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"ok"}]}],' +
      '"tools":[{"name":"f","input_schema":{"type":"object","properties":{"n":{"type":"integer","maximum":99999999999999999999}}}}]}';
    const res = await post('/anthropic/v1/messages', text);
    expect(res.status).toBe(200);
    const raw = openai.calls.at(-1)!.raw!;
    expect(raw).not.toContain('tollgate-exact-number');
    expect(raw).toContain('"maximum":99999999999999999999');
    // The arguments are a JSON text inside a string: the digits are there, as a number, not a quoted marker.
    const call = (openai.calls.at(-1)!.body as { messages: Array<{ tool_calls?: Array<{ function: { arguments: string } }> }> }).messages.find((m) => m.tool_calls)!;
    expect(call.tool_calls![0]!.function.arguments).toBe('{"n":123456789012345678901234,"big":1e400}');
  });

  it('numbers a double cannot hold at all (overflow, subnormal) and duplicate keys, as JSON.parse reads them', async () => {
    const res = await post('/v1/chat/completions', '{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"user":"a","user":"b","logit_bias":{"1":1e400},"x_tiny":2.5e-324}');
    expect(res.status).toBe(200);
    const raw = openai.calls.at(-1)!.raw!;
    expect(raw).toContain('"logit_bias":{"1":1e400}');
    expect(raw).toContain('"x_tiny":2.5e-324');
    expect(raw).toContain('"user":"b"');
    expect(raw).not.toContain('"user":"a"');
  });

  it('a huge number where tollgate reads the value is a clear 400, never a 500', async () => {
    const res = await post('/v1/chat/completions', '{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"seed":9223372036854775807,"max_tokens":99999999999999999999}');
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { param: string; message: string } };
    expect(body.error.param).toBe('max_tokens');
    expect(body.error.message).toContain('100000000000000000000');
    expect(body.error.message).not.toContain('tollgate-exact-number');
    const anthropicRoute = await post('/anthropic/v1/messages', '{"model":"anthropic/claude-haiku-4-5","max_tokens":99999999999999999999,"temperature":0.70000000000000000001,"metadata":{"user_id":"u"},"messages":[{"role":"user","content":"hi"}]}');
    expect(anthropicRoute.status).toBe(400);
    const anthropicBody = (await anthropicRoute.json()) as { type: string; error: { message: string } };
    expect(anthropicBody.type).toBe('error');
    expect(anthropicBody.error.message).toContain('max_tokens');
    expect(anthropicBody.error.message).not.toContain('tollgate-exact-number');
    const genai = await post('/genai/v1beta/models/gemini-2.0-flash:generateContent?key=k', '{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":99999999999999999999}}');
    expect(genai.status).toBe(400);
    expect(await genai.text()).not.toContain('tollgate-exact-number');
    expect(openai.calls).toHaveLength(0);
    expect(anthropic.calls).toHaveLength(0);
    expect(gemini.calls).toHaveLength(0);
  });

  it('a deeply nested body with a long number still gets json_too_deep', async () => {
    const res = await post('/v1/chat/completions', `{"model":"openai/gpt-4o-mini","x":${'['.repeat(5000)}12345678901234567890${']'.repeat(5000)}}`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('json_too_deep');
  });
});
