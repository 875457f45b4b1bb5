import Anthropic from '@anthropic-ai/sdk';
import type { ConfigInput } from '../../src/config/schema.js';
import { startGateway, type RunningGateway } from './gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream, type RecordedCall } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A gateway with a scripted Anthropic upstream (`anthropic`) and a scripted OpenAI one (`openai`, for failovers and
 * translations), and the Anthropic SDK pointed at its `/anthropic` route: what the pass-through tests share.
 */
export interface AnthropicRig {
  upstream: AnthropicUpstream;
  openai: ScriptedUpstream;
  tg: RunningGateway;
  client: Anthropic;
  /** The last request the Anthropic upstream received. */
  lastCall(): RecordedCall;
  /** The last answer the Anthropic upstream sent. */
  lastSent(): AnthropicUpstream['sent'][number];
  /** A raw Messages request, for what the SDK would not send or to read the exact bytes back. */
  post(body: Record<string, unknown>): Promise<Response>;
  reset(): void;
  stop(): Promise<void>;
}

export async function startAnthropicRig(extra: ConfigInput = {}): Promise<AnthropicRig> {
  const upstream = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  const openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  const tg = await startGateway({
    // Two attempts: a failed Anthropic attempt may fail over to an OpenAI fallback.
    settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 1 }, breaker: { enabled: false } } },
    ...extra,
    providers: {
      anthropic: { base_url: `${upstream.url}/v1`, api_key: 'sk-ant-upstream' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
      ...extra.providers,
    },
  });
  const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
  return {
    upstream,
    openai,
    tg,
    client,
    lastCall() {
      const call = upstream.calls.at(-1);
      if (!call) throw new Error('upstream saw no call');
      return call;
    },
    lastSent() {
      const sent = upstream.sent.at(-1);
      if (!sent) throw new Error('upstream sent no answer');
      return sent;
    },
    post(body) {
      return fetch(`${tg.url}/anthropic/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'client-side-key', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(body),
      });
    },
    reset() {
      upstream.reset();
      openai.reset();
    },
    async stop() {
      await tg.stop();
      await upstream.close();
      await openai.close();
    },
  };
}
