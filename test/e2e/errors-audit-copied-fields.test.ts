// A GatewayError changed on its way to the client (a message added to, a credential masked, a field renamed) is a copy:
// every copy keeps what it does not change. Two copies dropped the upstream's extra error fields (`upstreamFields`,
// Azure's `innererror`) an OpenAI client reads: the refusal of freshly fetched Entra credentials, and a plugin's own
// refusal with its secrets masked; the Responses route's renaming of a field dropped them as well.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import OpenAI, { type APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAzureUpstream, type AzureUpstream } from '../upstream/azure-upstream.js';
import { startEntraEndpoint, type ScriptedEntra } from '../upstream/entra-token-endpoint.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const hi = [{ role: 'user' as const, content: 'hi' }];

async function refusal(promise: Promise<unknown>): Promise<APIError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return err as APIError;
}

describe('Azure refusing the Entra token fetched afresh after a first 401', () => {
  let entra: ScriptedEntra;
  let azure: AzureUpstream;
  let tg: RunningGateway;

  beforeAll(async () => {
    entra = await startEntraEndpoint({});
    azure = await startAzureUpstream({ acceptsBearer: (token) => entra.accepts(token) });
    tg = await startGateway({
      providers: {
        azure: {
          type: 'azure',
          base_url: azure.url,
          api_version: '2024-10-21',
          auth: { type: 'entra', credential: 'client_secret', tenant_id: 'tenant-1', client_id: 'client-1', client_secret: 'entra-client-secret-value-xyz', authority_host: entra.url },
        },
      },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    });
  });

  afterAll(async () => {
    await tg?.stop();
    await Promise.all([azure?.close(), entra?.close()]);
  });

  it("keeps the fields Azure's error carried beyond OpenAI's four, as the first refusal would have", async () => {
    const innererror = { code: 'InvalidAuthenticationToken', target: 'Authorization' };
    const body = JSON.stringify({ error: { code: 'PermissionDenied', message: 'Access token is missing, invalid, audience is incorrect, or have expired.', status: 401, innererror } });
    // Both the first token and the one fetched after it are refused.
    azure.enqueue({ kind: 'raw', status: 401, body }, { kind: 'raw', status: 401, body });
    const err = await refusal(tg.client.chat.completions.create({ model: 'azure/gpt-4o-prod', messages: hi }));
    expect(err.status).toBe(401);
    expect(err.message).toContain('refused freshly fetched credentials too');
    expect(err.code).toBe('PermissionDenied');
    expect(err.error).toMatchObject({ code: 'PermissionDenied', status: 401, innererror });
    expect(entra.calls).toHaveLength(2);
  });
});

describe("a plugin's own refusal carrying extra error fields", () => {
  const KEY = 'safety-key-DISTINCTIVE-4242';
  // A content-safety plugin that refuses a prompt with the category its service named, as Azure's content filter does;
  // its service echoes the key it was called with. Listed twice: with its secret key option set, and without it.
  const PLUGIN = `
import { GatewayError } from ${JSON.stringify(pathToFileURL(join(import.meta.dirname, '../../src/index.ts')).href)};
export default {
  name: 'safety',
  secretOptions: ['api_key'],
  create(options) {
    return {
      name: 'safety',
      run(ctx, next) {
        if (ctx.request.model !== 'openai/' + options.refuse) return next();
        throw new GatewayError({
          status: 400,
          type: 'invalid_request_error',
          code: 'content_filter',
          param: ctx.request.model.endsWith('param') ? 'max_tokens' : null,
          message: 'The prompt was refused by content safety (max_tokens is fine).',
          upstreamFields: { innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { violence: { filtered: true, severity: 'high' } }, checked_with: options.api_key ?? 'no key' } },
        });
      },
    };
  },
};`;
  let upstream: ScriptedUpstream;
  let dir: string;
  let tg: RunningGateway;

  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: null });
    dir = mkdtempSync(join(tmpdir(), 'tollgate-errors-audit-'));
    const path = join(dir, 'safety.mjs');
    writeFileSync(path, PLUGIN);
    tg = await startGateway(
      openAIConfig(upstream.url, {
        plugins: [
          { name: 'safety-keyed', path, options: { api_key: 'env:SAFETY_KEY', refuse: 'keyed' } },
          { name: 'safety-plain', path, options: { refuse: 'plain-param' } },
        ],
      }),
      { SAFETY_KEY: KEY },
    );
  });

  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reaches an OpenAI client with the fields when the plugin has secrets, which are masked in them too', async () => {
    const err = await refusal(tg.client.chat.completions.create({ model: 'openai/keyed', messages: hi }));
    expect(err.status).toBe(400);
    expect(err.code).toBe('content_filter');
    expect(err.error).toMatchObject({ innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { violence: { filtered: true, severity: 'high' } }, checked_with: '****4242' } });
    expect(JSON.stringify(err.error)).not.toContain(KEY);
  });

  it("keeps them on the Responses route, whose renaming of a field the client did not write copies the error", async () => {
    const err = await refusal(tg.client.responses.create({ model: 'openai/plain-param', input: 'hi' }));
    expect(err.status).toBe(400);
    // The canonical field's name is the Responses client's own...
    expect(err.param).toBe('max_output_tokens');
    expect(err.message).toContain('max_output_tokens is fine');
    // ...and the rest of what the plugin said stays.
    expect(err.error).toMatchObject({ innererror: { code: 'ResponsibleAIPolicyViolation', checked_with: 'no key' } });
  });
});
