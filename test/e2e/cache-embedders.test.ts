import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { writeTinySentenceModel } from '../helpers/tiny-onnx-model.js';
import { startOpenAIUpstream } from '../upstream/openai-upstream.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function call(gateway: RunningGateway, body: Record<string, unknown>) {
  const { response } = await gateway.client.chat.completions.create(body as never).withResponse();
  return response.headers.get('x-tollgate-cache');
}

async function until(gateway: RunningGateway, ready: (report: any) => boolean): Promise<any> {
  const { api } = gatewayApi(() => gateway.url);
  for (let i = 0; i < 200; i++) {
    const report = (await api('GET', '/api/cache')).body;
    if (ready(report)) return report;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the cache did not reach the expected state');
}

describe('an ONNX sentence model from the models folder as the cache embedder', () => {
  it('embeds with the operator\'s model, and refuses a config naming a model that is not there', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-onnx-cache-'));
    dirs.push(dataDir);
    writeTinySentenceModel(join(dataDir, 'models'), 'tiny');
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startGateway(openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { embedder: 'onnx:tiny', threshold: 0.6 } } }), {}, { dataDir });
    try {
      const ask = (content: string) => ({ model: 'openai/m', messages: [{ role: 'user', content }] });
      await until(gateway, (report) => report.embedder.state === 'ready' && report.semantic_index.state === 'ready');
      expect(await call(gateway, ask('what is the capital of france'))).toBe('miss');
      await until(gateway, (report) => report.semantic_index.vectors === 1);
      // Filler words ("please tell me") leave the tiny model's mean vector close; the lexical check allows them.
      expect(await call(gateway, ask('please tell me the capital of france'))).toBe('hit-semantic');
      expect(await call(gateway, ask('what is the capital of germany'))).toBe('miss');
      const report = (await gatewayApi(() => gateway.url).api('GET', '/api/cache')).body;
      expect(report.embedder.id).toMatch(/^onnx:tiny\//);

      const refused = await gatewayApi(() => gateway.url).api('PATCH', '/api/config', { cache: { semantic: { embedder: 'onnx:not-there' } } });
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toMatch(/cache\.semantic\.embedder.*not-there/);
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe("a provider's embeddings model as the cache embedder", () => {
  it('calls it through the gateway, and finds the same question written another way', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startGateway(openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { embedder: 'openai/text-embedding-3-small' } } }));
    try {
      await until(gateway, (report) => report.embedder.state === 'ready' && report.semantic_index.state === 'ready');
      const question = 'Which river is the longest?';
      expect(await call(gateway, { model: 'openai/m', messages: [{ role: 'user', content: question }] })).toBe('miss');
      await until(gateway, (report) => report.semantic_index.vectors === 1);
      const embeddings = upstream.calls.filter((c) => c.path.endsWith('/embeddings'));
      expect(embeddings.at(-1)?.body).toMatchObject({ model: 'text-embedding-3-small', input: [question] });
      // The same text in content parts: another exact key, the same embedding.
      const parts = { model: 'openai/m', messages: [{ role: 'user', content: [{ type: 'text', text: question }] }] };
      expect(await call(gateway, parts)).toBe('hit-semantic');
      const report = (await gatewayApi(() => gateway.url).api('GET', '/api/cache')).body;
      expect(report.embedder.id).toBe('provider:openai/text-embedding-3-small');
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});
