import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayEvents } from '../../src/core/events.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A plugin that puts in `ctx.responseHeaders` a header Node refuses to write (a value with a line break, a name that is
 * no HTTP token) made the answer's writer fail: the client got the gateway's generic 500 'internal_error' naming no
 * plugin, and no `plugin.failed` was emitted. It is a plugin fault like a malformed event (plugins/README.md,
 * "Isolation"): 500 `plugin_failed` naming the plugin, in the route's own error shape, and `plugin.failed`.
 */

const rxjs = JSON.stringify(import.meta.resolve('rxjs'));
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

let upstream: ScriptedUpstream;
let dir: string;
let tg: RunningGateway;
const failed: Array<GatewayEvents['plugin.failed']> = [];

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
  dir = mkdtempSync(join(tmpdir(), 'tollgate-plugin-bad-header-'));
  // For a model `openai/<its tag>-<where>-<kind>`, sets a header Node refuses (a value with CR LF, a name with spaces)
  // or a framing header with a line break, on the request side (before next()), on the way back (on the upstream's
  // first event), or with its own answer; any other model passes untouched.
  const path = write(
    'header-setter.mjs',
    `import { map, of } from ${rxjs};
    const BAD = { value: ['x-note', 'first line\\r\\nx-injected: yes'], name: ['x bad name', 'v'], framing: ['content-length', '3\\n4'] };
    export default {
      name: 'header-setter',
      create: (options) => ({
        name: 'header-setter',
        run(ctx, next) {
          const [, tag, where, kind] = /^openai\\/(\\w+)-(before|after|own)-(value|name|framing)$/.exec(ctx.request.model) ?? [];
          if (tag !== options.tag) return next();
          const [name, value] = BAD[kind];
          if (where === 'before') {
            ctx.responseHeaders[name] = value;
            return next();
          }
          if (where === 'after') return next().pipe(map((event) => { ctx.responseHeaders[name] = value; return event; }));
          ctx.responseHeaders[name] = value;
          return of(ctx.stream
            ? { kind: 'chunk', chunk: { id: 'own', object: 'chat.completion.chunk', created: 1, model: 'own', choices: [{ index: 0, delta: { role: 'assistant', content: 'own' }, finish_reason: 'stop' }] } }
            : { kind: 'completion', completion: { id: 'own', object: 'chat.completion', created: 1, model: 'own', choices: [{ index: 0, message: { role: 'assistant', content: 'own' }, finish_reason: 'stop' }] } });
        },
      }),
    };`,
  );
  // header-setter runs outside optional-setter: a header it sets on the way back is its fault, not the inner plugin's
  // (whose answer completes first).
  tg = await startGateway(
    openAIConfig(upstream.url, {
      plugins: [
        { name: 'header-setter', path, options: { tag: 'h' }, placement: { after: 'auth' } },
        { name: 'optional-setter', path, options: { tag: 'o' }, optional: true, placement: { after: 'auth' } },
      ],
    }),
  );
  tg.gateway.bus.on('plugin.failed', (event: GatewayEvents['plugin.failed']) => void failed.push(event));
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function refusalOf(promise: Promise<unknown>): Promise<{ status: number | undefined; code: unknown; type: unknown; message: string; requestId: string | null }> {
  try {
    const answer = await promise;
    // A stream: read it to its end.
    if (answer && typeof (answer as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function') for await (const _ of answer as AsyncIterable<unknown>) void _;
    return { status: 200, code: null, type: null, message: '', requestId: null };
  } catch (err) {
    if (!(err instanceof OpenAI.APIError)) throw err;
    return { status: err.status, code: err.code, type: err.type, message: err.message, requestId: err.headers?.get('x-request-id') ?? null };
  }
}

describe('a plugin that sets a response header Node refuses', () => {
  for (const where of ['before', 'after', 'own'] as const) {
    for (const kind of ['value', 'name'] as const) {
      it(`(${kind}, ${where === 'before' ? 'before next()' : where === 'after' ? 'on the way back' : 'with its own answer'}) fails the request with plugin_failed naming it, whole and streamed`, async () => {
        for (const stream of [false, true]) {
          const before = failed.length;
          const refusal = await refusalOf(tg.client.chat.completions.create({ model: `openai/h-${where}-${kind}`, messages, stream }));
          expect(refusal).toMatchObject({ status: 500, code: 'plugin_failed', type: 'server_error' });
          expect(refusal.message).toContain(`Plugin 'header-setter' set the response header "${kind === 'value' ? 'x-note' : 'x bad name'}", which cannot be sent`);
          expect(refusal.message).not.toContain('injected');
          expect(refusal.requestId).toBeTruthy();
          expect(failed.slice(before)).toMatchObject([{ plugin: 'header-setter', reason: 'bad_header', requestId: refusal.requestId, skipped: false }]);
        }
      });
    }
  }

  it("answers in the Anthropic shape on /anthropic, and nothing of the header's text reaches the client", async () => {
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'unused', maxRetries: 0 });
    const err = await anthropic.messages.create({ model: 'openai/h-before-value', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Anthropic.InternalServerError);
    const error = err as InstanceType<typeof Anthropic.APIError>;
    expect(error.status).toBe(500);
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'api_error', message: expect.stringContaining("Plugin 'header-setter'") } });
    expect(error.headers?.get('x-injected')).toBeNull();
    expect(error.headers?.get('x-note')).toBeNull();
  });

  it('an optional plugin that set one before next() is skipped: the request is answered without the header', async () => {
    const before = failed.length;
    const { data, response } = await tg.client.chat.completions.create({ model: 'openai/o-before-value', messages }).withResponse();
    expect(data.choices[0]?.message.content).toBe('echo: hi');
    expect(response.headers.get('x-note')).toBeNull();
    expect(failed.slice(before)).toMatchObject([{ plugin: 'optional-setter', reason: 'bad_header', skipped: true }]);
  });

  it('control: a framing header (never sent) with such a value is left out as before, and a request passed by is answered', async () => {
    const before = failed.length;
    const framed = await tg.client.chat.completions.create({ model: 'openai/h-before-framing', messages });
    expect(framed.choices[0]?.message.content).toBe('echo: hi');
    const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    expect(answer.choices[0]?.message.content).toBe('echo: hi');
    expect(failed.slice(before)).toEqual([]);
  });
});
