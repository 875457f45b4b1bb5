import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';

// Cohere Embed on Bedrock errors on a text past its token limit unless `truncate` says which end to cut (its
// default is NONE), so a client's `truncate` extra must reach InvokeModel, in the words of the model's version.
let upstream: BedrockUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: 'AKIDAUDITTRUNC', secretAccessKey: 'audit-secret' });
  tg = await startGateway({ providers: { bedrock: { base_url: upstream.url, api_key: 'AKIDAUDITTRUNC:audit-secret', region: 'eu-west-1' } } });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});
beforeEach(() => {
  upstream.calls.length = 0;
});

/** An embeddings request with Cohere's `truncate`, an extra field the OpenAI SDK sends as it is. */
function embed(model: string, truncate: string): Promise<OpenAI.CreateEmbeddingResponse> {
  return tg.client.embeddings.create({ model, input: ['a long document', 'another'], truncate } as OpenAI.EmbeddingCreateParams);
}

describe('Cohere Embed on Bedrock: the client\'s truncate', () => {
  it('reaches Embed v3 as START or END', async () => {
    const response = await embed('bedrock/cohere.embed-english-v3', 'end');
    expect(response.data).toHaveLength(2);
    expect(upstream.calls[0]?.body).toEqual({ texts: ['a long document', 'another'], input_type: 'search_document', embedding_types: ['float'], truncate: 'END' });
  });

  it('reaches Embed v4 as LEFT or RIGHT, the words v4 takes', async () => {
    const right = await embed('bedrock/cohere.embed-v4:0', 'END');
    expect(right.data.map((item) => item.embedding.length)).toEqual([1536, 1536]);
    expect(upstream.calls[0]?.body).toMatchObject({ truncate: 'RIGHT' });
    await embed('bedrock/cohere.embed-v4:0', 'START');
    expect(upstream.calls[1]?.body).toMatchObject({ truncate: 'LEFT' });
  });

  it('refuses a value Cohere has no meaning for with a 400 naming the field, before any call', async () => {
    const error = (await embed('bedrock/cohere.embed-english-v3', 'MIDDLE').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.error).toMatchObject({ param: 'truncate' });
    expect(upstream.calls).toHaveLength(0);
  });
});
