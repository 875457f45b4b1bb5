// The stored Responses' disk: through the official OpenAI SDK against a running gateway, many big turns keep the
// store within settings.response_max_bytes (the oldest go first, in the background, and answer as OpenAI's not found).
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

const CLAUDE = 'anthropic/claude-sonnet-4-5';
const MAX_BYTES = 1024 * 1024;
let anthropic: AnthropicUpstream;
let tg: RunningGateway;
let alice: OpenAI;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  tg = await startGateway({
    settings: { response_max_bytes: MAX_BYTES },
    providers: { anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' } },
  });
  const created = await fetch(`${tg.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'alice' }) });
  alice = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: ((await created.json()) as { key: string }).key, maxRetries: 0 });
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
});

/** The bytes the stored Responses take, read from the store itself: every record's encoded value. */
export function storedBytes(gateway: RunningGateway): number {
  const db = gateway.gateway.store.root.openDB<unknown, string>({ name: 'responses' });
  let total = 0;
  for (const id of db.getKeys()) total += db.getBinary(id)?.length ?? 0;
  return total;
}

async function settled(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('settings.response_max_bytes', () => {
  it('keeps the store under the bound after many big turns, the oldest evicted as not found, the newest kept', async () => {
    const ids: string[] = [];
    // 30 turns of 100 KB each (the echo answers as much again): about 6 MB to keep, six times the bound.
    for (let i = 0; i < 30; i++) ids.push((await alice.responses.create({ model: CLAUDE, input: `${i} ${'x'.repeat(100_000)}` })).id);
    await settled(() => storedBytes(tg) <= MAX_BYTES);
    expect(storedBytes(tg)).toBeLessThanOrEqual(MAX_BYTES);
    expect(tg.gateway.responses.bytes()).toBe(storedBytes(tg));
    const gone = await alice.responses.retrieve(ids[0] as string).then(() => null, (err: unknown) => err as InstanceType<typeof OpenAI.APIError>);
    expect(gone?.status).toBe(404);
    expect(gone?.message).toContain(`Response with id '${ids[0]}' not found.`);
    const refused = await alice.responses.create({ model: CLAUDE, input: 'go on', previous_response_id: ids[0] as string }).then(() => null, (err: unknown) => err as InstanceType<typeof OpenAI.APIError>);
    expect([refused?.status, refused?.code]).toEqual([400, 'previous_response_not_found']);
    // The newest stay, and go on.
    expect((await alice.responses.retrieve(ids.at(-1) as string)).id).toBe(ids.at(-1));
    const next = await alice.responses.create({ model: CLAUDE, input: 'go on', previous_response_id: ids.at(-1) as string });
    expect(next.status).toBe('completed');
  });
});
