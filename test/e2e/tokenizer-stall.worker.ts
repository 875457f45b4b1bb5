// The clients and the scripted upstream of tokenizer-stall.test.ts, on their own thread: the gateway's event
// loop (the test's main thread) then carries only the gateway, as in production, and a stall measured there
// is the gateway's own. Messages in: { id, task, gatewayUrl, key? } or { task: 'close' }; out: { ready, upstreamUrl }
// once, then { id, result } or { id, error } per task (a task sends its request three times; the result is the last).
import { parentPort } from 'node:worker_threads';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { startOpenAIUpstream } from '../upstream/openai-upstream.js';

const MB = 1024 * 1024;

/** A deterministic unbroken run of base64 characters (no whitespace). */
export function base64Word(chars: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  let state = 42;
  const out: string[] = [];
  for (let i = 0; i < chars; i++) {
    state = (state * 1103515245 + 12345) % 2147483648;
    out.push(alphabet[(state >>> 16) % 64] as string);
  }
  return out.join('');
}

export interface Task {
  id: number;
  task: 'warm-up' | 'anthropic-count' | 'genai-count' | 'keyed-chat' | 'keyed-stream';
  gatewayUrl: string;
  key?: string;
}

const port = parentPort;
if (port) {
  const upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });

  const run = async ({ task, gatewayUrl, key }: Task): Promise<unknown> => {
    switch (task) {
      case 'warm-up': {
        const anthropic = new Anthropic({ baseURL: `${gatewayUrl}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
        await anthropic.messages.countTokens({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'warm up' }] });
        const ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${gatewayUrl}/genai`, timeout: 15_000 } });
        await ai.models.countTokens({ model: 'openai/gpt-4o-mini', contents: 'warm up' });
        const openai = new OpenAI({ baseURL: `${gatewayUrl}/v1`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
        await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'warm up' }], max_tokens: 5 });
        const stream = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'warm up' }], stream: true });
        for await (const _chunk of stream);
        return null;
      }
      case 'anthropic-count': {
        const word = 'a'.repeat(2 * MB);
        const client = new Anthropic({ baseURL: `${gatewayUrl}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
        const counted = await client.messages.countTokens({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: word }] });
        return { chars: word.length, tokens: counted.input_tokens };
      }
      case 'genai-count': {
        const word = base64Word(2 * MB);
        const ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${gatewayUrl}/genai`, timeout: 15_000 } });
        const counted = await ai.models.countTokens({ model: 'openai/gpt-4o-mini', contents: word });
        return { chars: word.length, tokens: counted.totalTokens };
      }
      case 'keyed-chat': {
        const word = 'z'.repeat(2 * MB);
        const client = new OpenAI({ baseURL: `${gatewayUrl}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 });
        const completion = await client.chat.completions.create({
          model: 'openai/gpt-4o-mini',
          messages: [
            { role: 'system', content: word },
            { role: 'user', content: 'hi' },
          ],
          max_tokens: 5,
        });
        const forwarded = upstream.calls.at(-1)?.body?.messages?.[0]?.content as string | undefined;
        return { chars: word.length, answer: completion.choices[0]?.message.content, forwardedChars: forwarded?.length ?? 0 };
      }
      case 'keyed-stream': {
        // Half a megabyte: counting it took minutes before counting was bounded (200 KB took 15 s), while the
        // echoed answer, one 512 KB SSE event the gateway parses and re-serialises, stays well inside a GC's reach.
        const word = base64Word(MB / 2);
        const client = new OpenAI({ baseURL: `${gatewayUrl}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 });
        // No include_usage: the upstream reports none, so the gateway counts prompt and answer itself.
        const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: word }], stream: true });
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
        return { chars: word.length, echoed: text === `echo: ${word}` };
      }
    }
  };

  port.on('message', (message: Task | { task: 'close' }) => {
    if (message.task === 'close') {
      void upstream.close().then(() => port.close());
      return;
    }
    // Each task runs three times in a row, so that /health is polled throughout several such requests.
    run(message)
      .then((first) => (message.task === 'warm-up' ? first : run(message).then(() => run(message))))
      .then(
      (result) => port.postMessage({ id: message.id, result }),
      (error: unknown) => port.postMessage({ id: message.id, error: String(error) }),
    );
  });
  port.postMessage({ ready: true, upstreamUrl: upstream.url });
}
