import { startGateway, type RunningGateway } from './gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/** A gateway in front of three scripted upstreams, one per wire format tollgate's routes speak. */
export interface ThreeUpstreams {
  openai: ScriptedUpstream;
  anthropic: AnthropicUpstream;
  gemini: GeminiUpstream;
  tg: RunningGateway;
  /** Forgets every upstream's recorded calls and scripted answers. */
  reset(): void;
  stop(): Promise<void>;
}

/**
 * Starts the three upstreams and a gateway with an `openai`, an `anthropic` and a `gemini` provider on them, for tests
 * that send the same thing on /v1, /anthropic and /genai. `settings` are the gateway's.
 */
export async function startThreeUpstreams(settings: Record<string, unknown> = {}): Promise<ThreeUpstreams> {
  const openai = await startOpenAIUpstream();
  const anthropic = await startAnthropicUpstream();
  const gemini = await startGeminiUpstream();
  const tg = await startGateway({
    settings,
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream-test' },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' },
    },
  });
  return {
    openai,
    anthropic,
    gemini,
    tg,
    reset() {
      openai.reset();
      anthropic.reset();
      gemini.reset();
    },
    async stop() {
      await tg.stop();
      await Promise.all([openai.close(), anthropic.close(), gemini.close()]);
    },
  };
}
