import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Plugins per route, per virtual key and per team: a plugin configured with `apply: listed` runs only for the
 * requests whose route, key or team lists it. Observed through the team-system-prompt example, whose system
 * prompt reaches the scripted upstream (which records every body) or does not.
 */
const examples = resolve(import.meta.dirname, '../../plugins/examples');
const PROMPT = 'You are the listed assistant.';

const listedPrompt = {
  name: 'team-system-prompt',
  path: `${examples}/team-system-prompt.ts`,
  options: { default: PROMPT },
  apply: 'listed' as const,
  placement: { after: 'route' },
};

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream();
  tg = await startGateway(
    openAIConfig(upstream.url, {
      plugins: [listedPrompt],
      routes: {
        'with-prompt': { targets: [{ model: 'openai/gpt-4o-mini' }], plugins: ['team-system-prompt'] },
        plain: { targets: [{ model: 'openai/gpt-4o-mini' }] },
      },
    }),
  );
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  return jsonRequest(tg.url, method, path, body);
}

const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

/** Sends one chat request and says whether the system prompt reached the upstream. */
async function prompted(model: string, apiKey = 'anonymous'): Promise<boolean> {
  const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey, maxRetries: 0 });
  await client.chat.completions.create({ model, messages: hi });
  const sent = upstream.calls.at(-1)?.body as { messages: Array<{ role: string; content: unknown }> };
  return sent.messages[0]?.role === 'system' && sent.messages[0].content === PROMPT;
}

describe('a plugin applied where it is listed', () => {
  it('runs for the route that lists it and not for another', async () => {
    expect(await prompted('with-prompt')).toBe(true);
    expect(await prompted('plain')).toBe(false);
    expect(await prompted('openai/gpt-4o-mini')).toBe(false);
  });

  it('runs for a virtual key or a team that lists it, on any route', async () => {
    const listedKey = await api('POST', '/api/keys', { name: 'listed', plugins: ['team-system-prompt'] });
    expect(listedKey.status).toBe(201);
    expect(listedKey.body.plugins).toEqual(['team-system-prompt']);
    const team = await api('POST', '/api/teams', { name: 'prompted-team', plugins: ['team-system-prompt'] });
    expect(team.status).toBe(201);
    const member = await api('POST', '/api/keys', { name: 'member', team: team.body.id });
    const other = await api('POST', '/api/keys', { name: 'other' });

    expect(await prompted('plain', listedKey.body.key)).toBe(true);
    expect(await prompted('openai/gpt-4o-mini', member.body.key)).toBe(true);
    expect(await prompted('plain', other.body.key)).toBe(false);

    // Taking it off the key turns it off at once.
    expect((await api('PATCH', `/api/keys/${listedKey.body.id}`, { plugins: [] })).status).toBe(200);
    expect(await prompted('plain', listedKey.body.key)).toBe(false);
  });

  it('follows a route change made through the API without a restart', async () => {
    expect(await prompted('plain')).toBe(false);
    const changed = await api('PUT', '/api/routes/plain', { targets: [{ model: 'openai/gpt-4o-mini' }], plugins: ['team-system-prompt'] });
    expect(changed.status).toBe(200);
    expect(await prompted('plain')).toBe(true);
    expect((await api('GET', '/api/routes/plain')).body.plugins).toEqual(['team-system-prompt']);
    expect((await api('PUT', '/api/routes/plain', { targets: [{ model: 'openai/gpt-4o-mini' }] })).status).toBe(200);
    expect(await prompted('plain')).toBe(false);
  });

  it('refuses a route, key or team naming a plugin that is not configured as listed, and keeps serving', async () => {
    const route = await api('PUT', '/api/routes/bad', { targets: [{ model: 'openai/gpt-4o-mini' }], plugins: ['nope'] });
    expect(route.status).toBe(400);
    expect(route.body.error.message).toMatch(/routes\.bad\.plugins\.0: "nope" is not a configured plugin/);
    expect((await api('GET', '/api/routes/bad')).status).toBe(404);

    const key = await api('POST', '/api/keys', { name: 'typo', plugins: ['team-system-promt'] });
    expect(key.status).toBe(400);
    expect(key.body.error).toMatchObject({ code: 'invalid_value', param: 'plugins.0' });
    const team = await api('POST', '/api/teams', { name: 'typo-team', plugins: [42] });
    expect(team.status).toBe(400);

    // A listed plugin placed before `route` cannot know the route: the whole change is refused.
    const config = await api('GET', '/api/config?layer=api');
    const early = await api('PUT', '/api/config', { ...config.body, plugins: [{ ...listedPrompt, placement: { after: 'auth' } }] });
    expect(early.status).toBe(400);
    expect(early.body.error.message).toMatch(/must be placed after "route"/);
    expect(await prompted('with-prompt')).toBe(true);
  });
});

describe('a listed plugin under a config name of its own', () => {
  it('runs where its entry name is listed (the name a route, key or team uses, not the stage name in its file)', async () => {
    const own = await startGateway(
      openAIConfig(upstream.url, {
        plugins: [{ ...listedPrompt, name: 'support-prompt' }],
        routes: { support: { targets: [{ model: 'openai/gpt-4o-mini' }], plugins: ['support-prompt'] } },
      }),
    );
    try {
      const client = new OpenAI({ baseURL: `${own.url}/v1`, apiKey: 'anonymous', maxRetries: 0 });
      await client.chat.completions.create({ model: 'support', messages: hi });
      const sent = upstream.calls.at(-1)?.body as { messages: Array<{ role: string; content: unknown }> };
      expect(sent.messages[0]).toEqual({ role: 'system', content: PROMPT });
      await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
      expect((upstream.calls.at(-1)?.body as { messages: Array<{ role: string }> }).messages[0]?.role).toBe('user');
    } finally {
      await own.stop();
    }
  });
});

describe('plugin options in the config JSON Schema', () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });

  it('the published config.schema.json checks the shipped plugins options', () => {
    const schema = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../config.schema.json'), 'utf8'));
    const validate = ajv.compile(schema);
    const entry = (options: unknown) => ({ plugins: [{ name: 'redact', path: './plugins/examples/redact-word.ts', options }] });
    expect(validate(entry({ words: ['hunter2'] })), JSON.stringify(validate.errors)).toBe(true);
    expect(validate(entry({ words: 'hunter2' }))).toBe(false);
    expect(validate(entry({ words: ['x'], unknown: true }))).toBe(false);
    // Another file's options are not judged by this plugin's schema.
    expect(validate({ plugins: [{ name: 'mine', path: './my-plugins/mine.ts', options: { anything: 1 } }] })).toBe(true);
  });

  it('GET /api/config/schema holds the options schema of each plugin the running config loaded', async () => {
    const answer = await api('GET', '/api/config/schema');
    expect(answer.status).toBe(200);
    const validate = ajv.compile(answer.body);
    const withOptions = (options: unknown) => ({ plugins: [{ ...listedPrompt, options }] });
    expect(validate(withOptions({ default: 'x', prompts: { research: 'y' } })), JSON.stringify(validate.errors)).toBe(true);
    expect(validate(withOptions({ prompts: 'not a map' }))).toBe(false);
  });
});
