import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { calcPrice } from '@pydantic/genai-prices';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, WEB_SEARCH_TOOL, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';
import { startVertexUpstream, type VertexUpstream } from '../upstream/vertex-upstream.js';

/**
 * Anthropic's usage bills two meters beside its token counts (platform.claude.com, prompt caching pricing and the
 * Messages usage object): cache writes split by lifetime in `cache_creation` (a 1-hour write costs 2x the base input
 * price, a 5-minute one 1.25x; cache_creation_input_tokens is their sum) and `server_tool_use.web_search_requests`
 * (the web search tool, $10 per 1,000 searches). The scripted upstream reports both as Anthropic does; the expected
 * charge is worked out by hand from the bundled catalogue's rates.
 */
const ACCESS_KEY = 'AKIDEXAMPLESPENDAUDIT';
const SECRET = 'spend-audit-secret';
const FIVE_MINUTE = 1_000;
const ONE_HOUR = 3_000;
const READ = 500;

let anthropic: AnthropicUpstream;
let vertex: VertexUpstream;
let bedrock: BedrockUpstream;
let tg: RunningGateway;
let dir: string;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  vertex = await startVertexUpstream();
  bedrock = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET });
  dir = mkdtempSync(join(tmpdir(), 'tg-spend-anthropic-'));
  const keyFile = join(dir, 'sa.json');
  writeFileSync(keyFile, vertex.serviceAccount, { mode: 0o600 });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      anthropic: { base_url: anthropic.url, api_key: 'sk-ant-upstream' },
      vertex: { base_url: vertex.url, api_key: `file:${keyFile}`, region: 'europe-west4' },
      bedrock: { base_url: bedrock.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' },
    },
  });
  for (const upstream of [anthropic, vertex.anthropic, bedrock.anthropic]) upstream.setCacheTokens(READ, FIVE_MINUTE, ONE_HOUR);
});
afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  await vertex?.close();
  await bedrock?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The catalogue's flat rates for the model (USD per million tokens, per thousand searches), as the test reads them. */
function catalogueRates(model: string, catalogue: string): Record<string, number> {
  const found = calcPrice({}, model, { providerId: catalogue });
  if (!found || found.provider.id !== catalogue) throw new Error(`the ${catalogue} catalogue has no price for ${model}`);
  const rates: Record<string, number> = {};
  // The prompts here are far below any long-context tier: the base price of a tiered one.
  for (const [key, value] of Object.entries(found.model_price)) rates[key] = typeof value === 'object' && value !== null ? value.base : (value as number);
  return rates;
}

interface Counts {
  /** Uncached input (Anthropic's input_tokens). */
  input: number;
  output: number;
  searches?: number;
}

/** The hand computation: 1-hour writes at the catalogue's 1-hour rate, or Anthropic's 2x the input rate without one. */
function expectedCost(rates: Record<string, number>, counts: Counts): number {
  const oneHourRate = rates.cache_write_1h_mtok ?? 2 * (rates.input_mtok as number);
  return (
    (counts.input * (rates.input_mtok as number) +
      READ * (rates.cache_read_mtok as number) +
      FIVE_MINUTE * (rates.cache_write_mtok as number) +
      ONE_HOUR * oneHourRate +
      counts.output * (rates.output_mtok as number)) /
      1e6 +
    ((counts.searches ?? 0) * (rates.web_searches_kcount ?? 0)) / 1e3
  );
}

/** The key's spend and its one logged request's cost. */
async function charged(keyId: string): Promise<{ spend: number; logged: number }> {
  let logged: Array<Record<string, number>> = [];
  for (const deadline = Date.now() + 5_000; logged.length === 0 && Date.now() < deadline; ) {
    logged = (await api('GET', `/api/logs?key_id=${keyId}`)).body.data;
    if (logged.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(logged).toHaveLength(1);
  return { spend: (await api('GET', `/api/keys/${keyId}`)).body.spend, logged: logged[0]?.cost_usd as number };
}

/** An OpenAI SDK call's counts, Anthropic's uncached input being the prompt less the cache reads and writes. */
function countsOf(usage: { prompt_tokens: number; completion_tokens: number } | undefined | null): Counts {
  if (!usage) throw new Error('no usage');
  return { input: usage.prompt_tokens - READ - FIVE_MINUTE - ONE_HOUR, output: usage.completion_tokens };
}

/** An Anthropic SDK message's counts, as Anthropic reports them. */
function messageCounts(message: Anthropic.Message): Counts {
  expect(message.usage.cache_creation).toEqual({ ephemeral_5m_input_tokens: FIVE_MINUTE, ephemeral_1h_input_tokens: ONE_HOUR });
  return { input: message.usage.input_tokens, output: message.usage.output_tokens, searches: message.usage.server_tool_use?.web_search_requests ?? 0 };
}

const messages = [{ role: 'user' as const, content: 'summarise the cached manual' }];
const search = { model: 'anthropic/claude-sonnet-4-5', max_tokens: 300, tools: [{ type: WEB_SEARCH_TOOL, name: 'web_search', max_uses: 3 } as const], messages: [{ role: 'user' as const, content: 'search the web for tollgate' }] };

describe('1-hour cache writes', () => {
  const rates = catalogueRates('claude-sonnet-4-5', 'anthropic');

  it('are charged at the catalogue 1-hour rate, not the 5-minute one (Anthropic, whole answer)', async () => {
    expect(rates.cache_write_1h_mtok).toBeGreaterThan(rates.cache_write_mtok as number);
    const key = await createKey({ name: 'one-hour-whole' });
    const completion = await clientFor(key.key).chat.completions.create({ model: 'anthropic/claude-sonnet-4-5', messages });
    const expected = expectedCost(rates, countsOf(completion.usage));
    const { spend, logged } = await charged(key.id);
    expect(spend).toBeCloseTo(expected, 9);
    expect(logged).toBeCloseTo(expected, 9);
  });

  it('are charged at the 1-hour rate from a streamed answer (Anthropic)', async () => {
    const key = await createKey({ name: 'one-hour-stream' });
    const stream = await clientFor(key.key).chat.completions.create({ model: 'anthropic/claude-sonnet-4-5', messages, stream: true, stream_options: { include_usage: true } });
    let usage: { prompt_tokens: number; completion_tokens: number } | null | undefined;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    const expected = expectedCost(rates, countsOf(usage));
    const { spend, logged } = await charged(key.id);
    expect(spend).toBeCloseTo(expected, 9);
    expect(logged).toBeCloseTo(expected, 9);
  });

  it('are charged at 2x the input rate for Claude on Vertex AI, whose catalogue has no 1-hour rate', async () => {
    const vertexRates = catalogueRates('claude-sonnet-4-5', 'google');
    expect(vertexRates.cache_write_1h_mtok).toBeUndefined();
    const key = await createKey({ name: 'one-hour-vertex' });
    const completion = await clientFor(key.key).chat.completions.create({ model: 'vertex/claude-sonnet-4-5', messages, max_tokens: 100 });
    const expected = expectedCost(vertexRates, countsOf(completion.usage));
    const { spend, logged } = await charged(key.id);
    expect(spend).toBeCloseTo(expected, 9);
    expect(logged).toBeCloseTo(expected, 9);
  });

  it('are charged at 2x the input rate for Claude on Bedrock (invoke, passed through from an Anthropic client)', async () => {
    const model = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
    const bedrockRates = catalogueRates(model, 'aws');
    expect(bedrockRates.cache_write_1h_mtok).toBeUndefined();
    const key = await createKey({ name: 'one-hour-bedrock' });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key.key, maxRetries: 0 });
    const message = await client.messages.stream({ model: `bedrock/${model}`, max_tokens: 100, messages }).finalMessage();
    expect(bedrock.calls.at(-1)?.action).toBe('invoke-with-response-stream');
    const expected = expectedCost(bedrockRates, messageCounts(message));
    const { spend, logged } = await charged(key.id);
    expect(spend).toBeCloseTo(expected, 9);
    expect(logged).toBeCloseTo(expected, 9);
  });
});

describe('web searches', () => {
  const rates = catalogueRates('claude-sonnet-4-5', 'anthropic');

  it('are charged per search through the /anthropic pass-through (whole answer)', async () => {
    expect(rates.web_searches_kcount).toBe(10);
    const key = await createKey({ name: 'search-whole' });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key.key, maxRetries: 0 });
    const message = await client.messages.create(search);
    const counts = messageCounts(message);
    expect(counts.searches).toBe(1);
    const expected = expectedCost(rates, counts);
    const { spend, logged } = await charged(key.id);
    expect(spend).toBeCloseTo(expected, 9);
    expect(logged).toBeCloseTo(expected, 9);
  });

  it('are charged per search from a stream, where message_delta reports them', async () => {
    const key = await createKey({ name: 'search-stream' });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key.key, maxRetries: 0 });
    const message = await client.messages.stream(search).finalMessage();
    const counts = messageCounts(message);
    expect(counts.searches).toBe(1);
    const expected = expectedCost(rates, counts);
    const { spend, logged } = await charged(key.id);
    expect(spend).toBeCloseTo(expected, 9);
    expect(logged).toBeCloseTo(expected, 9);
  });
});
