import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A `json_schema` guardrail compiles the schema each request's `response_format` names. Every client may send a schema
// of its own (a new one each request, or one that happens to share an `$id` with someone else's), and the gateway runs
// for months: what it keeps of the schemas must stay bounded, and one client's schema must not change how another's
// answer is checked.

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapAfterGc(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  // record: false, or the upstream's list of calls would be what grows.
  upstream = await startOpenAIUpstream({ record: false });
  tg = await startGateway(
    openAIConfig(upstream.url, {
      guardrails: { rules: [{ name: 'json', kind: 'json_schema', action: 'block' }] },
      settings: { routing: { retry: { max_attempts: 1 } } },
    }),
  );
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

/** A schema of its own for request `i`: the answer (`{"echo": ...}`) is valid against it. */
function schemaFor(i: number, required = 'echo'): Record<string, unknown> {
  const properties: Record<string, unknown> = { echo: { type: 'string' } };
  for (let p = 0; p < 8; p++) properties[`field_${i}_${p}`] = { type: 'object', properties: { value: { type: 'string', maxLength: 100 + p } } };
  return { type: 'object', properties, required: [required] };
}

function format(schema: Record<string, unknown>): OpenAI.ResponseFormatJSONSchema {
  return { type: 'json_schema', json_schema: { name: 'answer', schema } };
}

async function askWith(from: number, count: number, concurrency: number): Promise<void> {
  let next = from;
  const worker = async (): Promise<void> => {
    while (next < from + count) {
      const i = next++;
      const answer = await tg.client.chat.completions.create({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'json please' }],
        response_format: format(schemaFor(i)),
      });
      expect(answer.choices[0]?.finish_reason).toBe('stop');
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
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

describe('schemas clients send to a json_schema guardrail', () => {
  it('are not kept without bound: 2,000 different schemas leave the heap about where 400 left it', { timeout: 60_000 }, async () => {
    // Warm up: the gateway's own bounded caches (validators, labels, pools) fill here.
    await askWith(0, 400, 8);
    const before = heapAfterGc();
    await askWith(400, 2_000, 8);
    const grown = heapAfterGc() - before;
    // Kept for ever, each compiled schema held about 25 KB: about 50 MB for these 2,000.
    expect(grown).toBeLessThan(15 * 1024 * 1024);
  });

  it("one client's schema naming an $id does not stop another's schema with the same $id from being checked", async () => {
    const first = await tg.client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'json please' }],
      response_format: format({ $id: 'https://example.com/answer.json', type: 'object', properties: { echo: { type: 'string' } }, required: ['echo'] }),
    });
    expect(first.choices[0]).toMatchObject({ finish_reason: 'stop' });
    // Another client, its own schema under the same $id: the answer does not have the field it requires.
    const second = await tg.client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'json please' }],
      response_format: format({ $id: 'https://example.com/answer.json', type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'] }),
    });
    expect(second.choices[0]).toMatchObject({ message: { content: '' }, finish_reason: 'content_filter' });
    // And the first schema, sent again, is still checked as its own.
    const again = await tg.client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'json please' }],
      response_format: format({ $id: 'https://example.com/answer.json', type: 'object', properties: { echo: { type: 'string' } }, required: ['echo'] }),
    });
    expect(again.choices[0]).toMatchObject({ finish_reason: 'stop' });
  });

  it("a pattern in a client's schema that backtracks for ever on the answer does not hold the event loop", async () => {
    const format = (pattern: string) => ({
      type: 'json_schema' as const,
      json_schema: { name: 'answer', schema: { type: 'object', properties: { echo: { type: 'string', pattern } }, required: ['echo'] } },
    });
    // The answer is {"echo": "<the prompt>"}: 27 letters and a `!`, a near-miss for ^(a+)+$ that takes its regular
    // expression 2^27 steps (9 s here before the fix; 40 letters would be hours, and every other client waits for it).
    const { result: risky, gapMs } = await withLongestGap(() =>
      tg.client.chat.completions.create({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: `${'a'.repeat(27)}!` }],
        response_format: format('^(a+)+$'),
      }),
    );
    expect(gapMs).toBeLessThan(500);
    // The schema cannot be checked safely, so the answer passes as a schema that does not compile does.
    expect(risky.choices[0]).toMatchObject({ finish_reason: 'stop' });

    // Nor one that tries every start of a long run: [a-z]+-[0-9]+ costs the square of the run's length (seconds for
    // the 80,000 letters here). A string that long is not tested against a client's pattern.
    const { result: long, gapMs: longGapMs } = await withLongestGap(() =>
      tg.client.chat.completions.create({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'a'.repeat(80_000) }],
        response_format: format('[a-z]+-[0-9]+'),
      }),
    );
    expect(longGapMs).toBeLessThan(500);
    expect(long.choices[0]).toMatchObject({ finish_reason: 'stop' });

    // Patterns without that risk are still checked, either way.
    const valid = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'json please' }], response_format: format('^json [a-z]+$') });
    expect(valid.choices[0]).toMatchObject({ finish_reason: 'stop' });
    const short = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'abc-123' }], response_format: format('[a-z]+-[0-9]+') });
    expect(short.choices[0]).toMatchObject({ finish_reason: 'stop' });
    const shortMiss = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'abc-def' }], response_format: format('[a-z]+-[0-9]+') });
    expect(shortMiss.choices[0]).toMatchObject({ finish_reason: 'content_filter' });
    const invalid = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'json please' }], response_format: format('^xml') });
    expect(invalid.choices[0]).toMatchObject({ message: { content: '' }, finish_reason: 'content_filter' });
  });

  it("a client's huge schema does not hold the event loop while it is compiled", async () => {
    // 1,000 alternatives of an object each (100 KB): ajv took seconds to compile it on the event loop, every other
    // request waiting (a 20 MB body would hold minutes of it).
    const alternatives = Array.from({ length: 1_000 }, (_, i) => ({ type: 'object', properties: { kind: { const: i } }, required: ['kind'] }));
    const schema = { type: 'object', properties: { echo: { type: 'string' }, extra: { oneOf: alternatives } } };
    const { result: answer, gapMs } = await withLongestGap(() =>
      tg.client.chat.completions.create({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'json please' }],
        response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } },
      }),
    );
    expect(gapMs).toBeLessThan(500);
    // Too large to check: the answer passes, as for a schema that does not compile.
    expect(answer.choices[0]).toMatchObject({ finish_reason: 'stop' });
  });

  it('with megabytes of text each are not kept by the hundred', { timeout: 60_000 }, async () => {
    const before = heapAfterGc();
    for (let i = 0; i < 150; i++) {
      // A valid schema of a few objects, with 1 MB of description: 150 of them kept (as the cache's keys, and by the
      // compiler) were 300 MB.
      const schema = { type: 'object', description: `${i} ${'d'.repeat(1024 * 1024)}`, properties: { echo: { type: 'string' } }, required: ['echo'] };
      const answer = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'json please' }], response_format: format(schema) });
      expect(answer.choices[0]?.finish_reason).toBe('stop');
    }
    expect(heapAfterGc() - before).toBeLessThan(100 * 1024 * 1024);
    // Still checked: the schema of the last of them, against an answer without the field it requires.
    const schema = { type: 'object', description: 'd'.repeat(1024 * 1024), properties: { summary: { type: 'string' } }, required: ['summary'] };
    const invalid = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'json please' }], response_format: format(schema) });
    expect(invalid.choices[0]).toMatchObject({ finish_reason: 'content_filter' });
  });
});
