// Upstream failures a newcomer can act on: an unreachable upstream says what went wrong, and the operator's side
// (the request log) names the URL tried (never its query, which may hold a key), which the client is never shown;
// an HTML error page is summarised; long upstream messages and long client inputs are cut in error messages.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { jsonRequest } from '../helpers/api.js';
import { freePort } from '../helpers/net.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';

let upstream: ScriptedUpstream;
// A second provider's upstream, for the fallback in 'upstream messages through the openai SDK'.
let backup: ScriptedUpstream;
let tg: RunningGateway;
let deadPort: number;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  backup = await startOpenAIUpstream({ apiKey: 'sk-backup-test' });
  deadPort = await freePort();
  tg = await startGateway(
    openAIConfig(upstream.url, {
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      providers: {
        openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' },
        gone: { type: 'openai', base_url: `http://127.0.0.1:${deadPort}/v1`, api_key: 'sk-x' },
        nowhere: { type: 'openai', base_url: 'http://tollgate-test-host.invalid/v1', api_key: 'sk-x' },
        // https to a plain-HTTP port: the TLS handshake fails.
        plaintext: { type: 'openai', base_url: `https://127.0.0.1:${upstream.port}/v1`, api_key: 'sk-x' },
        gemini: { base_url: `http://127.0.0.1:${deadPort}/v1beta`, api_key: 'AIza-secret-gemini-key' },
        azure: { base_url: `http://127.0.0.1:${deadPort}`, api_key: 'azure-secret', api_version: '2024-10-21' },
        backup: { type: 'openai', base_url: `${backup.url}/v1`, api_key: 'sk-backup-test' },
      },
      // openai first, backup after it: the last answer the client sees comes from the second provider.
      routes: { careful: { targets: [{ model: 'openai/gpt-4o-mini', weight: 1 }], fallbacks: ['backup/gpt-4o-mini'], retry: { max_attempts: 2 } } },
    }),
  );
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
  await backup.close();
});
beforeEach(() => {
  upstream.reset();
  backup.reset();
});

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi there' }];

async function failure(model: string, stream = false): Promise<InstanceType<typeof OpenAI.APIError>> {
  const result = await (async () => {
    if (!stream) return tg.client.chat.completions.create({ model, messages });
    const answer = await tg.client.chat.completions.create({ model, messages, stream: true });
    for await (const _chunk of answer) {
      // drain
    }
    return answer;
  })().catch((err: unknown) => err);
  expect(result).toBeInstanceOf(OpenAI.APIError);
  return result as InstanceType<typeof OpenAI.APIError>;
}

/** The error message the request log (the operator's side) keeps for the request that failed with `error`. */
async function loggedMessage(error: InstanceType<typeof OpenAI.APIError>): Promise<string> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const found = await jsonRequest(tg.url, 'GET', `/api/logs/${error.requestID}`);
    if (found.status === 200) return found.body.error_message as string;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`no log entry for ${error.requestID}`);
}

describe('an unreachable upstream', () => {
  it('says that nothing listens there (ECONNREFUSED); the URL it tried is for the operator only', async () => {
    const error = await failure('gone/gpt-4o-mini');
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_unreachable');
    expect(error.message).toContain('gone: Could not reach the upstream (ECONNREFUSED: connection refused');
    expect(error.message).toContain('providers.gone.base_url');
    expect(error.message).not.toContain(`127.0.0.1:${deadPort}`);
    expect(await loggedMessage(error)).toContain(`gone: Could not reach the upstream at http://127.0.0.1:${deadPort}/v1/chat/completions (ECONNREFUSED`);
  });

  it('says that DNS does not know the host (ENOTFOUND); the host is for the operator only', async () => {
    const error = await failure('nowhere/gpt-4o-mini');
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_unreachable');
    expect(error.message).toMatch(/ENOTFOUND: host not found in DNS|EAI_AGAIN/);
    expect(error.message).not.toContain('tollgate-test-host');
    expect(await loggedMessage(error)).toContain('http://tollgate-test-host.invalid/v1/chat/completions');
  });

  it('says that TLS failed; where is for the operator only', async () => {
    const error = await failure('plaintext/gpt-4o-mini');
    expect(error.status).toBe(502);
    expect(error.message).toContain('plaintext: TLS failed with the upstream (');
    expect(error.message).toContain("check the URL's scheme and port");
    expect(error.message).not.toContain(`127.0.0.1:${upstream.port}`);
    expect(await loggedMessage(error)).toContain(`plaintext: TLS failed with the upstream at https://127.0.0.1:${upstream.port}/v1/chat/completions`);
  });

  it('never shows the query string, not even to the operator (where Gemini streams say alt=sse and Azure its api-version)', async () => {
    const gemini = await failure('gemini/gemini-2.5-flash', true);
    expect(gemini.status).toBe(502);
    expect(gemini.message).not.toContain(`127.0.0.1:${deadPort}`);
    const geminiLogged = await loggedMessage(gemini);
    expect(geminiLogged).toContain(`http://127.0.0.1:${deadPort}/v1beta/models/gemini-2.5-flash:streamGenerateContent`);
    for (const text of [gemini.message, geminiLogged]) {
      expect(text).not.toContain('?');
      expect(text).not.toContain('alt=sse');
      expect(text).not.toContain('AIza-secret');
    }
    const azure = await failure('azure/my-deployment');
    expect(azure.message).not.toContain(`127.0.0.1:${deadPort}`);
    const azureLogged = await loggedMessage(azure);
    expect(azureLogged).toContain(`http://127.0.0.1:${deadPort}/openai/deployments/my-deployment/chat/completions`);
    for (const text of [azure.message, azureLogged]) {
      expect(text).not.toContain('api-version');
      expect(text).not.toContain('azure-secret');
    }
  });
});

describe('upstream error bodies', () => {
  it('summarises an HTML error page by its title, with the status, instead of pasting it', async () => {
    const page = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>502 Bad Gateway</title><style>body{}</style></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center>${'<p>filler</p>'.repeat(2000)}</body></html>`;
    upstream.enqueue({ kind: 'raw', status: 502, headers: { 'content-type': 'text/html' }, body: page });
    const error = await failure('openai/gpt-4o-mini');
    expect(error.status).toBe(502);
    expect(error.message).toContain('openai: upstream answered HTTP 502 with an HTML page ("502 Bad Gateway").');
    expect(error.message).not.toContain('<');
    expect(error.message.length).toBeLessThan(200);
  });

  it('summarises an HTML page served without a content type by its first heading', async () => {
    upstream.enqueue({ kind: 'raw', status: 403, headers: {}, body: '<html><body><h2>Access Denied</h2><p>You don&#39;t have permission.</p></body></html>' });
    const error = await failure('openai/gpt-4o-mini');
    expect(error.status).toBe(403);
    expect(error.message).toContain('openai: upstream answered HTTP 403 with an HTML page ("Access Denied").');
  });

  it('passes an ordinary upstream message on as the provider wrote it', async () => {
    upstream.enqueue({ kind: 'error', status: 400, message: "Invalid value for 'temperature': must be at most 2." });
    const error = await failure('openai/gpt-4o-mini');
    expect(error.status).toBe(400);
    expect(error.message).toBe("400 Invalid value for 'temperature': must be at most 2.");
  });

  it('cuts an upstream message of 50,000 characters to 1,000', async () => {
    upstream.enqueue({ kind: 'error', status: 400, message: 'q'.repeat(50_000) });
    const error = await failure('openai/gpt-4o-mini');
    expect(error.status).toBe(400);
    expect(error.message).toBe(`400 ${'q'.repeat(1000)}… (50000 characters)`);
  });
});

// Issue 14: the provider's message reaches the client as written; which provider and how many attempts are the
// x-tollgate-provider and x-tollgate-attempts headers, never spliced into the message.
describe('upstream messages through the openai SDK', () => {
  const TEMPERATURE = "Invalid value for 'temperature'";

  it("keeps an upstream 400's message word for word and names the provider and attempts in headers", async () => {
    upstream.enqueue({ kind: 'error', status: 400, message: TEMPERATURE, type: 'invalid_request_error', code: 'invalid_value' });
    const error = await failure('openai/gpt-4o-mini');
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.status).toBe(400);
    expect(error.message).toBe(`400 ${TEMPERATURE}`);
    expect((error.error as { message?: unknown }).message).toBe(TEMPERATURE);
    expect(error.code).toBe('invalid_value');
    expect(error.headers?.get('x-tollgate-provider')).toBe('openai');
    expect(error.headers?.get('x-tollgate-attempts')).toBe('1');
    expect(upstream.calls).toHaveLength(1);
  });

  it("after a fallback over two targets, keeps the last provider's message word for word and says 2 attempts", async () => {
    upstream.enqueue({ kind: 'error', status: 503, message: 'The first provider is overloaded.' });
    backup.enqueue({ kind: 'error', status: 400, message: TEMPERATURE, type: 'invalid_request_error', code: 'invalid_value' });
    const error = await failure('careful');
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.message).toBe(`400 ${TEMPERATURE}`);
    expect((error.error as { message?: unknown }).message).toBe(TEMPERATURE);
    expect(error.headers?.get('x-tollgate-provider')).toBe('backup');
    expect(error.headers?.get('x-tollgate-attempts')).toBe('2');
    expect(upstream.calls).toHaveLength(1);
    expect(backup.calls).toHaveLength(1);
  });
});

describe('client inputs echoed in errors', () => {
  it('quotes a long unknown model name only in part', async () => {
    const provider = `p${'x'.repeat(239)}`;
    const error = await failure(`${provider}/model`);
    expect(error.status).toBe(404);
    expect(error.code).toBe('provider_not_found');
    expect(error.message).toContain(`Unknown provider '${provider.slice(0, 200)}… (240 characters)'`);
    expect(error.message).not.toContain(provider);
  });

  it('keeps the message for an ordinary unknown provider word for word', async () => {
    const error = await failure('acme/model');
    expect(error.message).toContain("Unknown provider 'acme' in model 'acme/model'. Known providers: ");
  });
});
