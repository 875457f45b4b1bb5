import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { jsonRequest } from '../helpers/api.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A web app calling the gateway from the browser (the OpenAI SDK with `dangerouslyAllowBrowser`, the Anthropic SDK
 * with its direct-browser-access header), with a virtual key of its own: the browser asks first (a CORS preflight)
 * and reads the answer only if the gateway allows it, as OpenAI's, Anthropic's and Google's APIs do. Without a key,
 * a page of another site must not use the operator's provider keys through the loopback access of zero config.
 */

const TIMEOUT = 60_000;
/** The headers the OpenAI SDK (v5) sends from a browser, besides content-type. */
const OPENAI_SDK_HEADERS = ['authorization', 'x-stainless-arch', 'x-stainless-lang', 'x-stainless-os', 'x-stainless-package-version', 'x-stainless-retry-count', 'x-stainless-runtime', 'x-stainless-runtime-version', 'x-stainless-timeout'];

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let browser: Browser;
let page: Page;
let key: string;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  tg = await startGateway(openAIConfig(upstream.url));
  key = (await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'web-app' })).body.key;
  browser = await launchChromium();
  const context = await browser.newContext();
  // What the user grants when Chromium asks whether the site may reach devices on the local network.
  await context.grantPermissions(['local-network-access'], { origin: 'https://app.example' });
  page = await context.newPage();
  // A page of another site: served by the test, never by the gateway.
  await page.route('https://app.example/**', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>app</title>' }));
  await page.goto('https://app.example/');
}, TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

/** A fetch from the page; a request the browser refuses (CORS) comes back as status 0 and its error. */
async function fetchFromPage(url: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; text: string; requestId: string | null }> {
  return page.evaluate(
    async ({ url, headers, body }) => {
      try {
        const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
        return { status: response.status, text: await response.text(), requestId: response.headers.get('x-request-id') };
      } catch (err) {
        return { status: 0, text: String(err), requestId: null };
      }
    },
    { url, headers, body },
  );
}

const CHAT = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'from the browser' }] };

describe('a web app on another origin, with a virtual key', () => {
  it('calls /v1/chat/completions with the headers the OpenAI SDK sends, and reads the answer and its request id', async () => {
    const headers = Object.fromEntries(OPENAI_SDK_HEADERS.map((name) => [name, name === 'authorization' ? `Bearer ${key}` : 'x']));
    const answer = await fetchFromPage(`${tg.url}/v1/chat/completions`, { ...headers, 'content-type': 'application/json' }, CHAT);
    expect(answer.status, answer.text).toBe(200);
    expect(JSON.parse(answer.text).choices[0].message.content).toBe('echo: from the browser');
    expect(answer.requestId).toMatch(/\S/);
    expect(upstream.calls).toHaveLength(1);
  });

  it("calls /anthropic/v1/messages as the Anthropic SDK does from a browser, and reads an error in Anthropic's shape", async () => {
    const headers = { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'anthropic-dangerous-direct-browser-access': 'true', 'content-type': 'application/json' };
    const answer = await fetchFromPage(`${tg.url}/anthropic/v1/messages`, headers, { model: 'openai/gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.status, answer.text).toBe(200);
    const refused = await fetchFromPage(`${tg.url}/anthropic/v1/messages`, headers, { model: 'openai/gpt-4o-mini', messages: [] });
    expect(refused.status, refused.text).toBe(400);
    expect(JSON.parse(refused.text)).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });
});

describe('a page on another origin without a key', () => {
  it("cannot call a model on the operator's keys through loopback access: 401, and the upstream is not called", async () => {
    const answer = await fetchFromPage(`${tg.url}/v1/chat/completions`, { 'content-type': 'application/json' }, CHAT);
    expect(answer.status, answer.text).toBe(401);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { code: 'virtual_key_required' } });
    expect(upstream.calls).toHaveLength(0);
  });

  it('cannot read the management API either: no CORS there', async () => {
    const answer = await page.evaluate(async (url) => fetch(url).then((response) => String(response.status), (err: unknown) => `refused: ${String(err)}`), `${tg.url}/api/keys`);
    expect(answer).toMatch(/^refused/);
  });
});
