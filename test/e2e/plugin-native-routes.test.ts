import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

/**
 * A request-side plugin that knows only `ctx.request` (as plugins/README.md tells it to), on the routes whose
 * upstream of the client's own format gets the client's body as it came (native pass-through: /anthropic to
 * Anthropic, /genai to Gemini): its change must reach the upstream there too.
 */
const NOTE = `
export default {
  name: 'note',
  create: () => ({
    name: 'note',
    run(ctx, next) {
      if (ctx.operation !== 'chat') return next();
      ctx.request.messages = [{ role: 'system', content: 'PLUGIN NOTE' }, ...ctx.request.messages];
      const last = ctx.request.messages.at(-1);
      if (typeof last.content === 'string') last.content = last.content.replace('secret', '[changed]');
      return next();
    },
  }),
};
`;

const examples = resolve(import.meta.dirname, '../../plugins/examples');
let dir: string;
let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-plugin-native-'));
  writeFileSync(join(dir, 'note.mjs'), NOTE);
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  tg = await startGateway({
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
    },
    plugins: [{ name: 'note', path: join(dir, 'note.mjs'), placement: { after: 'auth' } }],
  });
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  await gemini?.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  anthropic.reset();
  gemini.reset();
});

async function patchPlugins(plugins: unknown[]): Promise<void> {
  const res = await fetch(`${tg.url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ plugins }) });
  expect(res.status).toBe(200);
}

describe('a plugin that changes ctx.request on a native pass-through route', () => {
  it('/anthropic: the Anthropic upstream gets the changed request, whole and streamed', async () => {
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
    const message = await client.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'my secret question' }] });
    expect(message.type).toBe('message');
    const stream = await client.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'my secret question' }] });
    for await (const event of stream) void event;
    expect(anthropic.calls).toHaveLength(2);
    for (const call of anthropic.calls) {
      const body = call.body as { system?: unknown; messages: Array<{ role: string; content: unknown }> };
      expect(JSON.stringify(body.system)).toContain('PLUGIN NOTE');
      expect(JSON.stringify(body.messages)).toContain('my [changed] question');
      expect(JSON.stringify(body.messages)).not.toContain('secret');
    }
  });

  it('/genai: the Gemini upstream gets the changed request', async () => {
    const client = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
    const answer = await client.models.generateContent({ model: 'gemini/gemini-2.5-flash', contents: 'my secret question' });
    expect(answer.text).toBeTruthy();
    expect(gemini.calls).toHaveLength(1);
    const body = JSON.stringify(gemini.calls[0]!.body);
    expect(body).toContain('PLUGIN NOTE');
    expect(body).toContain('my [changed] question');
    expect(body).not.toContain('secret');
  });

  it('a plugin that changes the client body too (team-system-prompt) keeps native pass-through', async () => {
    await patchPlugins([{ name: 'team-system-prompt', path: `${examples}/team-system-prompt.ts`, options: { default: 'Be kind.' } }]);
    try {
      const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
      // A field the canonical request does not carry (`service_tier`) reaches the upstream only in the
      // client's own body.
      const params = { model: 'anthropic/claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }], service_tier: 'auto' };
      await client.messages.create(params as Anthropic.MessageCreateParamsNonStreaming);
      const body = anthropic.calls.at(-1)!.body as { system?: unknown; service_tier?: unknown };
      expect(body.system).toBe('Be kind.');
      expect(body.service_tier).toBe('auto');
    } finally {
      await patchPlugins([{ name: 'note', path: join(dir, 'note.mjs'), placement: { after: 'auth' } }]);
    }
  });
});
