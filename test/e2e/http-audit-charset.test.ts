import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../helpers/gateway.js';
import { startThreeUpstreams, type ThreeUpstreams } from '../helpers/three-upstreams.js';
import type { AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import type { GeminiUpstream } from '../upstream/gemini-upstream.js';
import type { ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * JSON exchanged between systems is UTF-8 (RFC 8259 §8.1), and the gateway reads every body so. A body whose
 * Content-Type declares another charset (`charset=utf-16le`, `latin1`, `iso-8859-1`) gets a 415 in the route's own
 * error shape naming the charset, instead of text the client never wrote reaching the upstream (Latin-1 bytes that
 * happen to be valid UTF-8) or a puzzling syntax error (UTF-16). `utf-8` and `us-ascii`, in any case, quoted or not,
 * go on as before. The bodies are sent raw: an SDK only ever sends UTF-8.
 */

let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;

let rig: ThreeUpstreams | undefined;
beforeAll(async () => {
  rig = await startThreeUpstreams({ routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } });
  ({ openai, anthropic, gemini, tg } = rig);
}, 30_000);
afterAll(async () => {
  await rig?.stop();
});
beforeEach(() => rig?.reset());

/** The text the client means: Latin-1 `Ã©`, whose bytes (C3 A9) are also UTF-8 for `é`. */
const MEANT = 'cafÃ©';

const BODIES = {
  openai: (text: string) => ({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: text }] }),
  anthropic: (text: string) => ({ model: 'anthropic/claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: text }] }),
  gemini: (text: string) => ({ contents: [{ role: 'user', parts: [{ text }] }] }),
};

const PATHS = {
  openai: '/v1/chat/completions',
  litellm: '/litellm/chat/completions',
  anthropic: '/anthropic/v1/messages',
  gemini: '/genai/v1beta/models/gemini-2.0-flash:generateContent',
};

async function post(path: string, contentType: string, body: Buffer): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': contentType }, body });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

function expectNoUpstreamCalls(): void {
  expect(openai.calls).toHaveLength(0);
  expect(anthropic.calls).toHaveLength(0);
  expect(gemini.calls).toHaveLength(0);
}

describe('a JSON body declared in a charset other than UTF-8', () => {
  it('/v1 and /litellm: 415 in OpenAI shape naming the charset, for Latin-1 bytes that also read as UTF-8', async () => {
    const latin1 = Buffer.from(JSON.stringify(BODIES.openai(MEANT)), 'latin1');
    for (const path of [PATHS.openai, PATHS.litellm]) {
      for (const contentType of ['application/json; charset=latin1', 'application/json;charset="ISO-8859-1"', 'application/json; Charset=iso-8859-1']) {
        const res = await post(path, contentType, latin1);
        expect(res.status, `${path} ${contentType}`).toBe(415);
        expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_media_type', param: 'content-type' });
        expect(res.body.error.message).toMatch(/charset '(latin1|ISO-8859-1|iso-8859-1)'.*UTF-8/);
        if (path === PATHS.litellm) expect(res.headers.get('x-litellm-call-id')).toBe(res.headers.get('x-request-id'));
      }
    }
    expectNoUpstreamCalls();
  });

  it('/v1: 415 for a UTF-16 body, not a JSON syntax error', async () => {
    const res = await post(PATHS.openai, 'application/json; charset=utf-16le', Buffer.from(JSON.stringify(BODIES.openai('hello')), 'utf16le'));
    expect(res.status).toBe(415);
    expect(res.body.error).toMatchObject({ code: 'unsupported_media_type', param: 'content-type' });
    expect(res.body.error.message).toContain("charset 'utf-16le'");
    expectNoUpstreamCalls();
  });

  it('/anthropic: 415 in Anthropic shape', async () => {
    const res = await post(PATHS.anthropic, 'application/json; charset=UTF-16LE', Buffer.from(JSON.stringify(BODIES.anthropic('hello')), 'utf16le'));
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(res.body.error.message).toContain("charset 'UTF-16LE'");
    expectNoUpstreamCalls();
  });

  it('/genai: 415 in Google shape', async () => {
    const res = await post(`${PATHS.gemini}?key=k`, 'application/json; charset=latin1', Buffer.from(JSON.stringify(BODIES.gemini(MEANT)), 'latin1'));
    expect(res.status).toBe(415);
    expect(res.body.error).toMatchObject({ code: 415, status: 'INVALID_ARGUMENT' });
    expect(res.body.error.message).toContain("charset 'latin1'");
    expectNoUpstreamCalls();
  });

  it('/api: 415 for a merge patch or JSON body of the management API, which a UTF-8 one passes', async () => {
    const patch = Buffer.from(JSON.stringify({ routes: { 'charset-route': { targets: [{ model: 'openai/gpt-4o-mini', weight: 1 }] } } }), 'latin1');
    for (const contentType of ['application/merge-patch+json; charset=latin1', 'application/json; charset=utf-16']) {
      const refused = await fetch(`${tg.url}/api/config`, { method: 'PATCH', headers: { 'content-type': contentType }, body: patch });
      expect(refused.status, contentType).toBe(415);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('unsupported_media_type');
    }
    const applied = await fetch(`${tg.url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json; charset=utf-8' }, body: patch });
    expect(applied.status).toBe(200);
  });

  it('UTF-8 and US-ASCII, in any case and quoted or not, and no charset, go on as before', async () => {
    const content = 'naïve 数据 🙂';
    const utf8 = Buffer.from(JSON.stringify(BODIES.openai(content)), 'utf8');
    for (const contentType of ['application/json', 'application/json; charset=utf-8', 'application/json; charset="UTF-8"', 'application/json;charset=utf8']) {
      const res = await post(PATHS.openai, contentType, utf8);
      expect(res.status, contentType).toBe(200);
      expect(openai.calls.at(-1)!.raw).toContain(content);
    }
    const ascii = await post(PATHS.openai, 'application/json; charset=US-ASCII', Buffer.from(JSON.stringify(BODIES.openai('plain')), 'ascii'));
    expect(ascii.status).toBe(200);
    // A Latin-1 declaration was refused above; the same text as UTF-8 reaches the upstream as the client wrote it.
    const meant = await post(PATHS.openai, 'application/json; charset=utf-8', Buffer.from(JSON.stringify(BODIES.openai(MEANT)), 'utf8'));
    expect(meant.status).toBe(200);
    expect(openai.calls.at(-1)!.raw).toContain(MEANT);
    // The other route families read the declaration the same way.
    const claude = await post(PATHS.anthropic, 'application/json; charset="utf-8"', Buffer.from(JSON.stringify(BODIES.anthropic(content)), 'utf8'));
    expect(claude.status).toBe(200);
    const latin1Anthropic = await post(PATHS.anthropic, 'application/json; charset=iso-8859-1', Buffer.from(JSON.stringify(BODIES.anthropic('plain')), 'latin1'));
    expect(latin1Anthropic.status).toBe(415);
  });
});
