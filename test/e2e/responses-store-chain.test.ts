// Stored Responses keep each turn as its own items and a link to the turn it continues: through the official OpenAI
// SDK against a running gateway, a 100-turn conversation's storage grows linearly while every turn still reaches the
// upstream whole and lists the whole conversation's input items; deleting a turn leaves the later turns whole, and
// the chain is read back after a restart.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

const CLAUDE = 'anthropic/claude-sonnet-4-5';
let anthropic: AnthropicUpstream;
let tg: RunningGateway;
let dataDir: string;
let apiKey: string;
let alice: OpenAI;

function config() {
  return { providers: { anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' } } };
}

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-respchain-'));
  tg = await startGateway(config(), {}, { dataDir });
  const created = await fetch(`${tg.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'alice' }) });
  apiKey = ((await created.json()) as { key: string }).key;
  alice = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey, maxRetries: 0 });
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  rmSync(dataDir, { recursive: true, force: true });
});
beforeEach(() => anthropic.reset());

/** The records in the store's `responses` database, read from the store itself: their ids and encoded bytes. */
function storedRecords(): Map<string, number> {
  const db = tg.gateway.store.root.openDB<unknown, string>({ name: 'responses' });
  const records = new Map<string, number>();
  for (const id of db.getKeys()) records.set(id, db.getBinary(id)?.length ?? 0);
  return records;
}
const storedBytes = (): number => [...storedRecords().values()].reduce((sum, bytes) => sum + bytes, 0);
/** Lets the background writes commit (they wait a few ms to share a commit). */
const committed = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 50));
const text = (item: any): string => (typeof item.content === 'string' ? item.content : item.content[0].text);

async function failure(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await call.then(() => null, (err: unknown) => err);
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

describe('a long conversation by previous_response_id', () => {
  it('takes storage growing linearly over 100 turns, each reaching the upstream whole and listing every input item', async () => {
    const start = storedBytes();
    const sizes: number[] = [];
    let previous: string | undefined;
    for (let turn = 0; turn < 100; turn++) {
      const response = await alice.responses.create({ model: CLAUDE, input: `turn ${turn} ${'x'.repeat(2_000)}`, ...(previous ? { previous_response_id: previous } : {}) });
      previous = response.id;
      if (turn % 10 === 9) {
        await committed();
        sizes.push(storedBytes() - start);
      }
    }
    // Each ten turns add about as much as the first ten did (each turn's whole conversation again: ten times as much).
    const first = sizes[0] as number;
    const last = (sizes[9] as number) - (sizes[8] as number);
    expect(last).toBeLessThan(first * 1.5);
    expect(sizes[9]).toBeLessThan(first * 15);

    const messages = anthropic.calls.at(-1)?.body.messages as Array<{ role: string; content: string }>;
    expect(messages).toHaveLength(199);
    expect(messages[0]?.content).toBe(`turn 0 ${'x'.repeat(2_000)}`);
    expect(messages[198]?.content).toBe(`turn 99 ${'x'.repeat(2_000)}`);
    const items: any[] = [];
    for await (const item of alice.responses.inputItems.list(previous as string, { order: 'asc', limit: 100 })) items.push(item);
    expect(items).toHaveLength(199);
    expect(items.map(text)).toEqual(messages.map((message) => message.content));
  });
});

describe('deleting a turn of a conversation', () => {
  it('hides it and leaves the later turns whole: their input items, their continuation, after a restart', async () => {
    const a = await alice.responses.create({ model: CLAUDE, input: 'alpha' });
    const b = await alice.responses.create({ model: CLAUDE, input: 'beta', previous_response_id: a.id });
    const c = await alice.responses.create({ model: CLAUDE, input: 'gamma', previous_response_id: b.id });
    expect(await alice.responses.delete(b.id)).toEqual({ id: b.id, object: 'response', deleted: true });
    expect((await failure(alice.responses.retrieve(b.id))).status).toBe(404);
    expect((await failure(alice.responses.inputItems.list(b.id))).status).toBe(404);
    expect((await failure(alice.responses.delete(b.id))).status).toBe(404);
    expect((await failure(alice.responses.create({ model: CLAUDE, input: 'x', previous_response_id: b.id }))).code).toBe('previous_response_not_found');
    const whole = ['alpha', a.output_text, 'beta', b.output_text, 'gamma'];
    expect((await alice.responses.inputItems.list(c.id, { order: 'asc' })).data.map(text)).toEqual(whole);

    await committed();
    await tg.stop();
    tg = await startGateway(config(), {}, { dataDir });
    alice = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey, maxRetries: 0 });
    await alice.responses.create({ model: CLAUDE, input: 'delta', previous_response_id: c.id });
    expect(anthropic.calls.at(-1)?.body.messages.map((message: any) => message.content)).toEqual([...whole, c.output_text, 'delta']);
  });

  it('a turn that nothing continues any more frees the deleted turns before it', async () => {
    const a = await alice.responses.create({ model: CLAUDE, input: 'one' });
    const b = await alice.responses.create({ model: CLAUDE, input: 'two', previous_response_id: a.id });
    const c = await alice.responses.create({ model: CLAUDE, input: 'three', previous_response_id: b.id });
    await alice.responses.delete(a.id);
    await alice.responses.delete(b.id);
    await committed();
    expect([a.id, b.id, c.id].map((id) => storedRecords().has(id))).toEqual([true, true, true]);
    await alice.responses.delete(c.id);
    await committed();
    expect([a.id, b.id, c.id].map((id) => storedRecords().has(id))).toEqual([false, false, false]);
  });
});
