import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

// A JSON schema sent to a Gemini model (response_format, a tool's parameters) has its `$ref`s inlined into Gemini's
// OpenAPI subset: each reference gets a copy of the schema it names. Definitions that name the next one twice double
// at every step, so a schema of a few KB inlines to millions of nodes: one request held the event loop for seconds
// (minutes and then out of memory a few steps deeper), every other client waiting.

let gemini: GeminiUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
});

/**
 * `depth` definitions, each naming the next in two properties. (Each reference sits in a one-item `items` list, which
 * the gateway inlines as it does a plain `items`: the scripted upstream's own check of a JSON Schema does not follow
 * that form, so it stays cheap and only the gateway's work is measured.)
 */
function doublingSchema(depth: number): Record<string, unknown> {
  const $defs: Record<string, unknown> = { [`d${depth}`]: { type: 'string' } };
  for (let i = depth - 1; i >= 0; i--) {
    const next = { type: 'array', items: [{ $ref: `#/$defs/d${i + 1}` }] };
    $defs[`d${i}`] = { type: 'object', properties: { left: next, right: next } };
  }
  return { type: 'object', properties: { echo: { type: 'string' }, tree: { $ref: '#/$defs/d0' } }, $defs };
}

/** What `run` resolves to, and the longest the event loop went without running a 5 ms timer meanwhile (ms). */
async function withLongestGap<T>(run: () => Promise<T>): Promise<{ result: T; gapMs: number }> {
  let last = performance.now();
  let gapMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    gapMs = Math.max(gapMs, now - last);
    last = now;
  }, 5);
  try {
    const result = await run();
    gapMs = Math.max(gapMs, performance.now() - last);
    return { result, gapMs };
  } finally {
    clearInterval(timer);
  }
}

describe('a JSON schema whose references multiply when inlined for Gemini', () => {
  it('does not hold the event loop: it goes to Gemini as JSON Schema, whose references Gemini resolves', async () => {
    const schema = doublingSchema(18);
    gemini.reset();
    const { result: answer, gapMs } = await withLongestGap(() =>
      tg.client.chat.completions.create({
        model: 'gemini/gemini-2.5-flash',
        messages: [{ role: 'user', content: 'json please' }],
        response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } },
      }),
    );
    expect(gapMs).toBeLessThan(500);
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    const config = gemini.calls.at(-1)?.body?.generationConfig;
    expect(config?.responseSchema).toBeUndefined();
    expect(config?.responseJsonSchema?.$defs?.d0).toBeDefined();
  });

  it("as a tool's parameters too", async () => {
    gemini.reset();
    const { result: answer, gapMs } = await withLongestGap(() =>
      tg.client.chat.completions.create({
        model: 'gemini/gemini-2.5-flash',
        messages: [{ role: 'user', content: 'hello' }],
        tools: [{ type: 'function', function: { name: 'plant', description: 'Plants a tree.', parameters: doublingSchema(18) } }],
      }),
    );
    expect(gapMs).toBeLessThan(500);
    expect(answer.choices[0]).toBeDefined();
    const declaration = gemini.calls.at(-1)?.body?.tools?.[0]?.functionDeclarations?.[0];
    expect(declaration?.parameters).toBeUndefined();
    expect(declaration?.parametersJsonSchema?.$defs?.d0).toBeDefined();
  });

  it('a schema whose inlined form is small is still sent in the subset, its references inlined', async () => {
    gemini.reset();
    await tg.client.chat.completions.create({
      model: 'gemini/gemini-2.5-flash',
      messages: [{ role: 'user', content: 'json please' }],
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: doublingSchema(3) } },
    });
    const config = gemini.calls.at(-1)?.body?.generationConfig;
    expect(config?.responseJsonSchema).toBeUndefined();
    expect(config?.responseSchema?.properties?.tree?.properties?.left?.items?.properties?.right?.items?.properties?.left?.items).toEqual({ type: 'string' });
  });
});

describe('a reference that is not valid percent-encoding', () => {
  it('is no 500: the schema goes as JSON Schema, and Gemini’s 400 for the reference reaches the client', async () => {
    gemini.reset();
    const error = await tg.client.chat.completions
      .create({
        model: 'gemini/gemini-2.5-flash',
        messages: [{ role: 'user', content: 'json please' }],
        response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object', properties: { x: { $ref: '#/$defs/%E0' } } } } },
      })
      .catch((err: unknown) => err as { status?: number; error?: { message?: string } });
    expect((error as { status?: number }).status).toBe(400);
    expect(gemini.calls.at(-1)?.body?.generationConfig?.responseJsonSchema?.properties?.x).toEqual({ $ref: '#/$defs/%E0' });
  });
});
