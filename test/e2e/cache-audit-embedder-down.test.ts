import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { writeTinySentenceModel } from '../helpers/tiny-onnx-model.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * README, "Never in the way": with the semantic tier on and its embedder's model unable to load (a damaged weights
 * file, which the config check cannot see), requests go on without the semantic tier. They must not each wait for
 * another load of the model to fail, and the exact tier keeps storing and serving answers.
 */

let dataDir: string;
let upstream: ScriptedUpstream;
let tg: RunningGateway;
const stored = new Set<string>();
/** Why each miss went without the semantic tier (`cache.miss`'s semanticSkipped), by request id. */
const skipped = new Map<string, string | null>();

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-embedder-down-'));
  const models = join(dataDir, 'models');
  writeTinySentenceModel(models, 'damaged');
  writeFileSync(join(models, 'damaged', 'onnx', 'model.onnx'), 'not an onnx model');
  upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
  tg = await startGateway(openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { embedder: 'onnx:damaged' } } }), {}, { dataDir });
  tg.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
  tg.gateway.bus.on('cache.miss', (event) => skipped.set(event.requestId, event.semanticSkipped));
  const { api } = gatewayApi(() => tg.url);
  for (let i = 0; i < 400; i++) {
    if ((await api('GET', '/api/cache')).body.embedder.state === 'failed') return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the damaged model's load did not fail");
}, 60_000);
afterAll(async () => {
  await tg.stop();
  await upstream.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function ask(question: string): Promise<{ cache: string | null; skipped: string | null | undefined }> {
  const { response } = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }] }).withResponse();
  const id = response.headers.get('x-request-id') ?? '';
  const cache = response.headers.get('x-tollgate-cache');
  if (cache === 'miss') for (let i = 0; i < 200 && !stored.has(id); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  if (cache === 'miss') expect(stored.has(id)).toBe(true);
  return { cache, skipped: skipped.get(id) };
}

describe('the semantic tier with an embedder whose model does not load', () => {
  it('answers misses without waiting on the embedder, and the exact tier still serves', async () => {
    for (let i = 0; i < 5; i++) {
      const miss = await ask(`What is the square root of ${i + 2}?`);
      expect(miss.cache).toBe('miss');
      // Skipped at once as unavailable: not a new load of the model waited for until it failed ('embedder failed:
      // ...') or until the lookup's 300 ms embedding budget ran out ('embedder slow').
      expect(miss.skipped).toBe('embedder unavailable');
    }
    expect((await ask('What is the square root of 2?')).cache).toBe('hit-exact');
  });
});
