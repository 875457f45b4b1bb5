import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayEvents } from '../../src/core/events.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Faults of user plugins found in an audit of the plugin seam, each driven through a running gateway and the official
 * clients: a plugin's own GatewayError quoting its credential, an options schema that throws, and a failure value that
 * cannot be turned into text.
 */

const rxjs = JSON.stringify(import.meta.resolve('rxjs'));
const zod = JSON.stringify(import.meta.resolve('zod'));
const tollgate = JSON.stringify(pathToFileURL(join(import.meta.dirname, '../../src/index.ts')).href);
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

let upstream: ScriptedUpstream;
let dir: string;
let running: RunningGateway | null = null;

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function statusOf(promise: Promise<unknown>): Promise<{ status: number | undefined; code: unknown; message: string }> {
  return promise.then(
    () => ({ status: 200, code: null, message: '' }),
    (err: { status?: number; code?: unknown; message: string; error?: { error?: { type?: string } } }) => ({ status: err.status, code: err.code ?? err.error?.error?.type, message: err.message }),
  );
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
  dir = mkdtempSync(join(tmpdir(), 'tollgate-plugin-audit-'));
});
afterAll(async () => {
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await running?.stop();
  running = null;
});

describe("a plugin's own GatewayError", () => {
  it('has the values of its secret options masked in the gateway log and the request log (its cause, its operator message)', async () => {
    // The documented way to fail a request with a 500 while telling the operator why is
    // gatewayError('internal_error', ..., { cause }), and a fuller operator-only text is `operatorMessage`. Both
    // passed the isolation unchanged: the runner logged the cause (an HTTP client's error with the key in its headers)
    // and the request log kept the operator message (a URL with ?key=) as written, credential and all.
    const path = write(
      'moderation.mjs',
      `import { throwError } from ${rxjs};
      import { gatewayError } from ${tollgate};
      export default {
        name: 'moderation',
        secretOptions: ['api_key'],
        create(options) {
          return {
            name: 'moderation',
            run(ctx) {
              if (ctx.request.model.endsWith('cause')) {
                const cause = Object.assign(new Error('Request failed with status code 401'), { config: { headers: { authorization: 'Bearer ' + options.api_key } } });
                return throwError(() => gatewayError('internal_error', 'Moderation is unavailable.', { cause }));
              }
              throw gatewayError('upstream_unreachable', 'Moderation is unreachable.', { operatorMessage: 'POST https://moderation.example/check?key=' + options.api_key + ' answered 403' });
            },
          };
        },
      };`,
    );
    const KEY = 'moderation-key-DISTINCTIVE-4242';
    const logged: string[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void logged.push(line) });
    running = await startGateway(openAIConfig(upstream.url, { plugins: [{ name: 'moderation', path, options: { api_key: 'env:MODERATION_KEY' } }] }), { MODERATION_KEY: KEY }, { log });
    const { client, url } = running;

    expect(await statusOf(client.chat.completions.create({ model: 'openai/cause', messages }))).toMatchObject({ status: 500, code: 'internal_error', message: expect.stringContaining('Moderation is unavailable.') });
    const anthropic = new Anthropic({ baseURL: `${url}/anthropic`, apiKey: 'x', maxRetries: 0 });
    expect(await statusOf(anthropic.messages.create({ model: 'openai/operator', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }))).toMatchObject({ status: 502 });

    const requestLog = async (): Promise<string> => (await fetch(`${url}/api/logs?limit=10`)).text();
    await expect.poll(async () => (JSON.parse(await requestLog()) as { data: unknown[] }).data.length).toBe(2);
    const entries = await requestLog();
    expect(entries).toContain('key=****4242 answered 403');
    expect(entries).not.toContain(KEY);
    // The operator still reads what happened, with the credential masked.
    expect(logged.some((line) => line.includes('Bearer ****4242'))).toBe(true);
    for (const line of logged) expect(line).not.toContain(KEY);
  });
});

describe("a plugin's options schema", () => {
  it('that throws while parsing, or is no schema at all, refuses the change with a 400 naming the options, and the start', async () => {
    // A transform that compiles what it parses (new RegExp) throws on a bad value rather than adding an issue, and
    // safeParse lets that through; a plain JSON Schema object given as `options` has no safeParse at all. Either was
    // a 500 'Internal gateway error.' to PATCH /api/config, and a start that failed without naming the entry.
    write(
      'pattern.mjs',
      `import { z } from ${zod};
      export default {
        name: 'pattern',
        options: z.strictObject({ pattern: z.string().transform((source) => new RegExp(source)) }),
        create: (options) => ({ name: 'pattern', run: (ctx, next) => next() }),
      };`,
    );
    write('json-schema.mjs', `export default { name: 'json-schema', options: { type: 'object', properties: {} }, create: () => ({ name: 'json-schema', run: (ctx, next) => next() }) };`);
    running = await startGateway(openAIConfig(upstream.url), {}, { configPath: join(dir, 'tollgate.yaml') });
    const { gateway, client, url } = running;
    const version = gateway.configService.current().version;
    const patch = async (plugins: unknown[]): Promise<{ status: number; json: any }> => {
      const res = await fetch(`${url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ plugins }) });
      return { status: res.status, json: await res.json() };
    };

    const bad = await patch([{ name: 'pattern', path: 'pattern.mjs', options: { pattern: '(' } }]);
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: 'invalid_config', param: 'plugins.0.options' });
    expect(bad.json.error.message).toMatch(/plugins\.0\.options: plugin "pattern".*Invalid regular expression/);
    const notSchema = await patch([{ name: 'json-schema', path: 'json-schema.mjs', options: {} }]);
    expect(notSchema.status).toBe(400);
    expect(notSchema.json.error).toMatchObject({ code: 'invalid_config', param: 'plugins.0.options' });
    expect(notSchema.json.error.message).toContain('zod schema');
    expect(gateway.configService.current().version).toBe(version);

    // A good value still applies, and requests go on.
    expect((await patch([{ name: 'pattern', path: 'pattern.mjs', options: { pattern: 'a+' } }])).status).toBe(200);
    expect((await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages })).choices).toHaveLength(1);
    await running.stop();
    running = null;

    await expect(startGateway(openAIConfig(upstream.url, { plugins: [{ name: 'pattern', path: 'pattern.mjs', options: { pattern: '(' } }] }), {}, { configPath: join(dir, 'tollgate.yaml') })).rejects.toThrow(
      /cannot start: plugins\.0\.options: plugin "pattern"/,
    );
  });
});

describe('a plugin failing with a value that has no text', () => {
  it('fails only its request with 500 plugin_failed, in the route shape, and the process lives on', async () => {
    // A failure value String() cannot convert (an object without a prototype, or whose toString throws) made the
    // isolation itself throw while describing it: as the Observable's error that happened inside rxjs, which reported
    // it as an uncaught exception (the end of `tollgate serve`) and never answered the request; thrown from run it
    // was a bare 500 'Internal gateway error.' naming no plugin.
    const path = write(
      'opaque.mjs',
      `import { throwError } from ${rxjs};
      const opaque = () => Object.create(null);
      export default { name: 'opaque', create: () => ({ name: 'opaque', run(ctx) {
        if (ctx.request.model.endsWith('thrown')) throw opaque();
        return throwError(opaque);
      } }) };`,
    );
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown): void => void uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      running = await startGateway(openAIConfig(upstream.url, { plugins: [{ name: 'opaque', path }] }));
      const { client, gateway, url } = running;
      const failed: Array<GatewayEvents['plugin.failed']> = [];
      gateway.bus.on('plugin.failed', (event) => failed.push(event));
      for (const model of ['openai/errored', 'openai/thrown']) {
        const result = await statusOf(client.chat.completions.create({ model, messages }, { timeout: 5_000 }));
        expect(result, model).toMatchObject({ status: 500, code: 'plugin_failed', message: expect.stringContaining("Plugin 'opaque'") });
      }
      const anthropic = new Anthropic({ baseURL: `${url}/anthropic`, apiKey: 'x', maxRetries: 0, timeout: 5_000 });
      const err = await anthropic.messages.create({ model: 'openai/errored', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(Anthropic.APIError);
      expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(500);
      expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'api_error', message: expect.stringContaining("Plugin 'opaque'") } });
      expect(failed.map((event) => event.reason)).toEqual(['errored', 'threw', 'errored']);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});
