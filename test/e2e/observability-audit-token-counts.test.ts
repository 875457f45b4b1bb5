// Token counting (`/anthropic/v1/messages/count_tokens`, `countTokens` on `/genai`) calls no model and costs nothing
// (README, Virtual keys): it never reaches the pipeline, so an answered count is in no log, metric or rollup. A count
// that failed (Anthropic's count endpoint limiting it with a 429, a model the gateway cannot resolve) was reported as
// a failed `chat` request all the same: a request-log record with no provider and no attempt, a 4xx in
// tollgate_requests_total and an error in /api/usage, so the error ratio of a client that counts before every turn
// (Claude Code) rose with each failed count while its successful counts were counted nowhere.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';

/** Anthropic's count endpoint: one count answered, then 429s (Anthropic limits counting apart from messages). */
let countServer: Server;
let counts = 0;
let tg: RunningGateway;
const { api } = gatewayApi(() => tg.url);

beforeAll(async () => {
  countServer = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url !== '/v1/messages/count_tokens') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'Not found' } }));
        return;
      }
      if (counts++ === 0) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ input_tokens: 12 }));
        return;
      }
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '5' }).end(JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'Number of count_tokens requests has exceeded your rate limit.' } }));
    });
  });
  await new Promise<void>((resolve) => countServer.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(countServer.address() as AddressInfo).port}`;
  tg = await startGateway({ providers: { anthropic: { base_url: `${url}/v1`, api_key: 'sk-ant-upstream' } } });
});
afterAll(async () => {
  await tg?.stop();
  await new Promise<void>((resolve) => countServer.close(() => resolve()));
});

describe('token counts', () => {
  it('are no model calls: a failed one is not logged, counted in the metrics or rolled up as a failed chat request', async () => {
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    const params = { model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user' as const, content: 'hi' }] };
    expect((await anthropic.messages.countTokens(params)).input_tokens).toBe(12);
    await expect(anthropic.messages.countTokens(params)).rejects.toMatchObject({ status: 429 });
    const genai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai` } });
    expect((await genai.models.countTokens({ model: 'anthropic/claude-sonnet-4-5', contents: 'hi' })).totalTokens).toBeGreaterThan(0);
    await expect(genai.models.countTokens({ model: 'nosuch/model', contents: 'hi' })).rejects.toMatchObject({ status: 404 });
    expect(counts).toBe(2);

    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await api('GET', '/api/logs')).body.data).toEqual([]);
    const metrics = await (await fetch(`${tg.url}/metrics`)).text();
    expect(metrics).not.toMatch(/^tollgate_requests_total\{/m);
    const usage = (await api('GET', '/api/usage?group_by=key')).body;
    expect(usage.totals).toEqual([]);
  });
});
