import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';

// Cohere embeds a query and its documents differently (input_type). A Gemini client says which with taskType;
// sent to Cohere as the adapters' default (search_document), a query would be embedded as a document.
let cohere: CohereUpstream;
let bedrock: BedrockUpstream;
let tg: RunningGateway;
let ai: GoogleGenAI;

beforeAll(async () => {
  cohere = await startCohereUpstream({ apiKey: 'co-audit' });
  bedrock = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: 'AKIDAUDITTASK', secretAccessKey: 'audit-secret' });
  tg = await startGateway({
    providers: {
      cohere: { base_url: `${cohere.url}/v2`, api_key: 'co-audit' },
      bedrock: { base_url: bedrock.url, api_key: 'AKIDAUDITTASK:audit-secret', region: 'eu-west-1' },
    },
  });
  ai = new GoogleGenAI({ apiKey: 'client-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
});
afterAll(async () => {
  await tg.stop();
  await cohere.close();
  await bedrock.close();
});
beforeEach(() => {
  cohere.calls.length = 0;
  bedrock.calls.length = 0;
});

describe('/genai embedContent: taskType reaches Cohere as input_type', () => {
  it('a RETRIEVAL_QUERY is embedded by Cohere as a search_query', async () => {
    const response = await ai.models.embedContent({ model: 'cohere/embed-english-v3.0', contents: 'what is a gateway?', config: { taskType: 'RETRIEVAL_QUERY' } });
    expect(response.embeddings?.[0]?.values).toHaveLength(1024);
    expect(cohere.calls[0]?.body).toMatchObject({ texts: ['what is a gateway?'], input_type: 'search_query' });
  });

  it('so is a CLASSIFICATION batch by Cohere Embed on Bedrock', async () => {
    const response = await ai.models.embedContent({ model: 'bedrock/cohere.embed-english-v3', contents: ['spam?', 'ham?'], config: { taskType: 'CLASSIFICATION' } });
    expect(response.embeddings).toHaveLength(2);
    expect(bedrock.calls[0]?.body).toEqual({ texts: ['spam?', 'ham?'], input_type: 'classification', embedding_types: ['float'] });
  });
});
