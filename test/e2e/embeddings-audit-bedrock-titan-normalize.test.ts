import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';

// Titan Text Embeddings V2 takes `normalize` (default true; docs.aws.amazon.com/bedrock/latest/userguide/
// model-parameters-titan-embed-text.html). tollgate wrote `normalize: true` over a client's `normalize: false`
// extra, so a client asking for the model's raw vectors got unit vectors without a word.
let upstream: BedrockUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: 'AKIDAUDITNORM', secretAccessKey: 'audit-secret' });
  tg = await startGateway({ providers: { bedrock: { base_url: upstream.url, api_key: 'AKIDAUDITNORM:audit-secret', region: 'eu-west-1' } } });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => {
  upstream.calls.length = 0;
});

const norm = (vector: number[]): number => Math.hypot(...vector);

describe('Titan Text Embeddings V2 on Bedrock: the client\'s normalize', () => {
  it('false reaches InvokeModel, and the raw vector comes back', async () => {
    const params = { model: 'bedrock/amazon.titan-embed-text-v2:0', input: 'raw scale please', dimensions: 256, normalize: false };
    const response = await tg.client.embeddings.create(params as OpenAI.EmbeddingCreateParams);
    expect(upstream.calls[0]?.body).toEqual({ inputText: 'raw scale please', dimensions: 256, normalize: false });
    expect(response.data[0]?.embedding).toHaveLength(256);
    expect(norm(response.data[0]?.embedding as number[])).toBeGreaterThan(1.5);
  });

  it('unsaid, it is Titan\'s default (normalised)', async () => {
    const response = await tg.client.embeddings.create({ model: 'bedrock/amazon.titan-embed-text-v2:0', input: 'unit please' });
    expect(upstream.calls[0]?.body).toMatchObject({ inputText: 'unit please', normalize: true });
    expect(norm(response.data[0]?.embedding as number[])).toBeCloseTo(1, 3);
  });

  it('not a boolean, it is the client\'s 400 naming it, before any call', async () => {
    const params = { model: 'bedrock/amazon.titan-embed-text-v2:0', input: 'x', normalize: 'no' };
    const error = await tg.client.embeddings.create(params as unknown as OpenAI.EmbeddingCreateParams).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'normalize' });
    expect(upstream.calls).toHaveLength(0);
  });
});
