import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// The secret rule on answers the way an agent's model writes secrets: inside a tool call's JSON arguments (where a
// private key's line breaks are `\n` escapes), streamed in fragments.

let upstream: ScriptedUpstream;
let tg: RunningGateway;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    guardrails: { rules: [{ name: 'keys', kind: 'secret', action: 'redact' }] },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

const BODY = Array.from({ length: 12 }, (_, i) => `MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC${String(i).padStart(13, 'Q')}`).join('\n');
const PEM = `-----BEGIN PRIVATE KEY-----\n${BODY}\n-----END PRIVATE KEY-----\n`;

/** An OpenAI stream of one tool call whose arguments come in `size`-character fragments. */
function toolCallStream(args: string, size: number): string {
  const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini' };
  const frames: unknown[] = [{ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'write_file', arguments: '' } }] }, finish_reason: null }] }];
  for (let i = 0; i < args.length; i += size) frames.push({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: args.slice(i, i + size) } }] }, finish_reason: null }] });
  frames.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] });
  return `${frames.map((frame) => `data: ${JSON.stringify(frame)}\n\n`).join('')}data: [DONE]\n\n`;
}

async function streamedArguments(args: string): Promise<string> {
  upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: toolCallStream(args, 24) });
  const stream = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'save my key' }] });
  let out = '';
  for await (const chunk of stream) for (const call of chunk.choices[0]?.delta.tool_calls ?? []) out += call.function?.arguments ?? '';
  return out;
}

describe('secrets in streamed tool call arguments', () => {
  it('redacts a whole private key written as a JSON string, escapes and all', async () => {
    const args = await streamedArguments(JSON.stringify({ path: '/home/me/.ssh/id_rsa', content: PEM }));
    expect(args).not.toContain('MIIEvQ');
    expect(JSON.parse(args)).toEqual({ path: '/home/me/.ssh/id_rsa', content: '[REDACTED:secret]\n' });
  });

  it('redacts a private key cut off before its END line, keeping the JSON valid', async () => {
    const cut = `-----BEGIN PRIVATE KEY-----\n${BODY.slice(0, 200)}`;
    const args = await streamedArguments(JSON.stringify({ note: `key: ${cut}`, quoted: `"${cut}\\"` }));
    expect(args).not.toContain('MIIEvQ');
    expect(JSON.parse(args)).toEqual({ note: 'key: [REDACTED:secret]', quoted: '"[REDACTED:secret]\\"' });
  });
});

describe('AWS credentials in a prompt', () => {
  it('redacts the secret access key, not only its key ID, before the prompt goes upstream', async () => {
    const secret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const pasted = `Why does this fail?\n[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = ${secret}\nregion = eu-west-1`;
    await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: pasted }] });
    const sent = upstream.calls.at(-1)?.body as { messages: Array<{ content: string }> };
    expect(sent.messages[0]!.content).toBe('Why does this fail?\n[default]\naws_access_key_id = [REDACTED:secret]\naws_secret_access_key = [REDACTED:secret]\nregion = eu-west-1');
  });
});
