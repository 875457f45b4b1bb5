import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';
import { countTextTokens } from '../../src/tokens/tokenizer.js';

// The request log's `estimated` says some tokens were counted by the gateway (README, "Request log, usage and
// exports"). Embeddings whose upstream reports no count (Gemini's batchEmbedContents without usageMetadata, Cohere
// Embed on Bedrock, whose count comes only in a header) are counted with the tokenizer, but the adapters handed that
// count on as if the upstream had reported it: logged and evented with `estimated: false`.
let gemini: GeminiUpstream;
let bedrock: BedrockUpstream;
let tg: RunningGateway;

interface LogRow {
  id: string;
  model: string;
  status: number;
  prompt_tokens: number;
  completion_tokens: number;
  estimated: boolean;
}

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  bedrock = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: 'AKIDAUDITEST', secretAccessKey: 'audit-secret' });
  tg = await startGateway({
    providers: {
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' },
      bedrock: { base_url: bedrock.url, api_key: 'AKIDAUDITEST:audit-secret', region: 'eu-west-1' },
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
  await bedrock?.close();
});
beforeEach(() => gemini.setUsage({}));

/** The log row of the request `id` (written just after the answer: polled briefly). */
async function logOf(id: string): Promise<LogRow> {
  for (let i = 0; i < 100; i++) {
    const rows = ((await (await fetch(`${tg.url}/api/logs?limit=20`)).json()) as { data: LogRow[] }).data;
    const row = rows.find((entry) => entry.id === id);
    if (row) return row;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`request ${id} was never logged`);
}

async function embed(model: string, input: string[]): Promise<{ prompt: number; row: LogRow }> {
  const { data, response } = await tg.client.embeddings.create({ model, input }).withResponse();
  return { prompt: data.usage.prompt_tokens, row: await logOf(response.headers.get('x-request-id') as string) };
}

const INPUT = ['the first text to embed', 'and a second one'];
const COUNTED = countTextTokens(INPUT[0] as string) + countTextTokens(INPUT[1] as string);

describe('embeddings tokens the gateway counted are logged as estimated', () => {
  it('Gemini without usageMetadata', async () => {
    gemini.setUsage({ omitEmbeddingUsage: true });
    const { prompt, row } = await embed('gemini/text-embedding-004', INPUT);
    expect(prompt).toBe(COUNTED);
    expect(row).toMatchObject({ status: 200, prompt_tokens: COUNTED, completion_tokens: 0, estimated: true });
  });

  it('Cohere Embed on Bedrock', async () => {
    const { prompt, row } = await embed('bedrock/cohere.embed-english-v3', INPUT);
    expect(prompt).toBe(COUNTED);
    expect(row).toMatchObject({ status: 200, prompt_tokens: COUNTED, completion_tokens: 0, estimated: true });
  });

  it('but not the counts an upstream reported', async () => {
    const reported = await embed('gemini/text-embedding-004', INPUT);
    expect(reported.row).toMatchObject({ status: 200, prompt_tokens: reported.prompt, estimated: false });
    const titan = await embed('bedrock/amazon.titan-embed-text-v2:0', ['one text']);
    expect(titan.row).toMatchObject({ status: 200, prompt_tokens: titan.prompt, estimated: false });
  });
});
