import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// README, "Access": behind a proxy named in settings.trusted_proxies, the client is read from X-Forwarded-For, else
// Forwarded, else X-Real-IP, and tollgate supports proxies that send only X-Real-IP (nginx's
// `proxy_set_header X-Real-IP $remote_addr;`) or only Forwarded. Such a proxy sets its own header and passes every
// other header of the client through unchanged (nginx does by default). A remote client that writes
// `X-Forwarded-For: 127.0.0.1` itself must not become a local one: no anonymous model calls on the operator's
// provider keys, no management API without the admin key.
//
// The gateway's peer here is the proxy on this host (127.0.0.1, trusted); each request carries exactly the headers
// such a proxy forwards for a client at 203.0.113.9 (a documentation address: the remote client).

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const messages = [{ role: 'user' as const, content: 'hi' }];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up' } },
    // nginx on this host forwards for the real clients (the README's example); no admin key.
    settings: { trusted_proxies: ['127.0.0.1'] },
  });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

function client(headers: Record<string, string>): OpenAI {
  return new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 5_000, defaultHeaders: headers });
}

/** What the proxy forwards for the remote client (its own header) with the header the client wrote itself. */
const spoofed: Array<Record<string, string>> = [
  // nginx: `proxy_set_header X-Real-IP $remote_addr;` only; the client sent X-Forwarded-For.
  { 'x-real-ip': '203.0.113.9', 'x-forwarded-for': '127.0.0.1' },
  { 'x-real-ip': '203.0.113.9', 'x-forwarded-for': '::1' },
  // A proxy that speaks RFC 7239 only; the client sent X-Forwarded-For.
  { forwarded: 'for=203.0.113.9;proto=https', 'x-forwarded-for': '127.0.0.1' },
  // nginx with X-Real-IP only; the client sent Forwarded.
  { 'x-real-ip': '203.0.113.9', forwarded: 'for=127.0.0.1' },
];

describe('a remote client behind a trusted proxy cannot pass for a local one with a header of its own', () => {
  it('model calls without a virtual key get 401 virtual_key_required', async () => {
    for (const headers of spoofed) {
      const error = await client(headers)
        .chat.completions.create({ model: 'openai/gpt-4o-mini', messages })
        .then(
          () => null,
          (err: unknown) => err,
        );
      expect(error, JSON.stringify(headers)).toBeInstanceOf(OpenAI.AuthenticationError);
      expect((error as InstanceType<typeof OpenAI.AuthenticationError>).code, JSON.stringify(headers)).toBe('virtual_key_required');
    }
  });

  it('the management API without an admin key answers 403 admin_api_loopback_only', async () => {
    for (const headers of spoofed) {
      const answer = await fetch(`${tg.url}/api/keys`, { headers });
      expect(answer.status, JSON.stringify(headers)).toBe(403);
      expect(((await answer.json()) as { error: { code: string } }).error.code, JSON.stringify(headers)).toBe('admin_api_loopback_only');
      const created = await fetch(`${tg.url}/api/keys`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'stolen' }) });
      expect(created.status, JSON.stringify(headers)).toBe(403);
    }
  });

  it('a client on this machine that the proxy forwards is still served: every header names loopback', async () => {
    for (const headers of <Array<Record<string, string>>>[
      { 'x-real-ip': '127.0.0.1', 'x-forwarded-for': '127.0.0.1' },
      { 'x-real-ip': '::1', forwarded: 'for="[::1]:5000"' },
      { 'x-real-ip': '127.0.0.1' },
    ]) {
      const answer = await client(headers).chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
      expect(answer.choices[0]?.message.content, JSON.stringify(headers)).toBe('echo: hi');
      expect((await fetch(`${tg.url}/api/keys`, { headers })).status, JSON.stringify(headers)).toBe(200);
    }
  });
});
