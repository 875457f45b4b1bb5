import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A spoken answer (gpt-4o-audio-preview, `modalities: ["text", "audio"]`) carries its text in `message.audio.transcript`
// (streamed as `delta.audio.transcript`, next to the base64 `delta.audio.data`), with `content` null. Output rules read
// it like the answer's content: an address the model spoke is redacted in the transcript, and a block withholds it.

const chunk = (delta: unknown, finish: string | null = null) =>
  JSON.stringify({ id: 'a1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-audio-preview', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
const sse = (events: readonly string[]) => `${events.map((data) => `data: ${data}\n\n`).join('')}data: [DONE]\n\n`;
const whole = (transcript: string) =>
  JSON.stringify({
    id: 'a2',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-audio-preview',
    choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: null, audio: { id: 'audio_1', data: 'UklGRiQAAABXQVZF', expires_at: 1_900_000_000, transcript } }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 },
  });
const audioRequest = { model: 'openai/gpt-4o-audio-preview', modalities: ['text', 'audio'] as Array<'text' | 'audio'>, audio: { voice: 'alloy' as const, format: 'wav' as const }, messages: [{ role: 'user' as const, content: 'Who do I write to?' }] };

interface AudioDelta {
  id?: string;
  transcript?: string;
  data?: string;
  expires_at?: number;
}

describe('output rules read a spoken answer’s transcript', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
    tg = await startGateway(
      openAIConfig(upstream.url, {
        guardrails: {
          rules: [
            { name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' },
            { name: 'codename', kind: 'keyword', action: 'block', applies_to: 'output', keywords: ['bluebird'] },
          ],
        },
      }),
    );
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  it('redacts an address in a whole answer’s transcript and keeps its audio', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: whole('Write to jane.doe@example.com today.') });
    const answer = await tg.client.chat.completions.create(audioRequest);
    const audio = answer.choices[0]?.message.audio;
    expect(audio?.transcript).toBe('Write to [REDACTED:email] today.');
    expect(audio?.data).toBe('UklGRiQAAABXQVZF');
    expect(audio?.id).toBe('audio_1');
    expect(audio?.expires_at).toBe(1_900_000_000);
  });

  it('withholds a whole answer whose transcript a block rule catches', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: whole('The codename is bluebird.') });
    const answer = await tg.client.chat.completions.create(audioRequest);
    expect(answer.choices[0]?.finish_reason).toBe('content_filter');
    expect(JSON.stringify(answer)).not.toContain('bluebird');
  });

  it('redacts an address split across streamed transcript pieces, and passes the audio data unchanged', async () => {
    const pieces = ['Write to ja', 'ne.doe@exa', 'mple.com to', 'day.'];
    const data = ['UklGRiQA', 'AABXQVZF', 'Zm10IBAA'];
    const events = [
      chunk({ role: 'assistant', content: null, refusal: null, audio: { id: 'audio_2' } }),
      ...pieces.flatMap((piece, i) => [chunk({ audio: { transcript: piece } }), ...(data[i] ? [chunk({ audio: { data: data[i] } })] : [])]),
      chunk({ audio: { expires_at: 1_900_000_000 } }),
      chunk({}, 'stop'),
    ];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) });
    const stream = await tg.client.chat.completions.create({ ...audioRequest, stream: true });
    let transcript = '';
    let audioData = '';
    let finish: string | null = null;
    for await (const part of stream) {
      const audio = (part.choices[0]?.delta as { audio?: AudioDelta } | undefined)?.audio;
      transcript += audio?.transcript ?? '';
      audioData += audio?.data ?? '';
      finish = part.choices[0]?.finish_reason ?? finish;
    }
    expect(transcript).toBe('Write to [REDACTED:email] today.');
    expect(audioData).toBe(data.join(''));
    expect(finish).toBe('stop');
  });

  it('ends a stream whose transcript a block rule catches with content_filter, the word never sent', async () => {
    const events = [chunk({ role: 'assistant', content: null, audio: { id: 'audio_3' } }), chunk({ audio: { transcript: 'The codename is blue' } }), chunk({ audio: { transcript: 'bird, as agreed.' } }), chunk({}, 'stop')];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) });
    const stream = await tg.client.chat.completions.create({ ...audioRequest, stream: true });
    let transcript = '';
    let finish: string | null = null;
    for await (const part of stream) {
      transcript += (part.choices[0]?.delta as { audio?: AudioDelta } | undefined)?.audio?.transcript ?? '';
      finish = part.choices[0]?.finish_reason ?? finish;
    }
    expect(transcript).not.toContain('bluebird');
    expect(transcript).not.toContain('bird');
    expect(finish).toBe('content_filter');
  });
});

describe('output moderation judges a spoken answer’s transcript', () => {
  let upstream: ScriptedUpstream;
  let tg: RunningGateway;
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
    tg = await startGateway(
      openAIConfig(upstream.url, {
        guardrails: { rules: [{ name: 'moderated', kind: 'moderation', action: 'block', applies_to: 'output', model: 'openai/moderator', timeout_ms: 3_000 }] },
      }),
    );
  });
  afterAll(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  afterEach(() => upstream.reset());

  it('withholds a whole spoken answer the classifier calls unsafe, its audio with it', async () => {
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: whole('Here is how to hurt someone.') }, { kind: 'reply', pieces: ['UNSAFE: violence'] });
    const answer = await tg.client.chat.completions.create(audioRequest);
    const judged = upstream.calls.find((call) => call.body?.model === 'moderator');
    expect(String(judged?.body.messages[1].content)).toContain('Here is how to hurt someone.');
    expect(answer.choices[0]?.finish_reason).toBe('content_filter');
    expect(answer.choices[0]?.message.audio ?? null).toBeNull();
  });

  it('withholds a streamed spoken answer the classifier calls unsafe', async () => {
    const events = [chunk({ role: 'assistant', content: null, audio: { id: 'audio_4' } }), chunk({ audio: { transcript: 'Here is how ' } }), chunk({ audio: { data: 'UklGRiQA' } }), chunk({ audio: { transcript: 'to hurt someone.' } }), chunk({}, 'stop')];
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse(events) }, { kind: 'reply', pieces: ['UNSAFE: violence'] });
    const stream = await tg.client.chat.completions.create({ ...audioRequest, stream: true });
    let transcript = '';
    let audioData = '';
    let finish: string | null = null;
    for await (const part of stream) {
      const audio = (part.choices[0]?.delta as { audio?: AudioDelta } | undefined)?.audio;
      transcript += audio?.transcript ?? '';
      audioData += audio?.data ?? '';
      finish = part.choices[0]?.finish_reason ?? finish;
    }
    expect(transcript).toBe('');
    expect(audioData).toBe('');
    expect(finish).toBe('content_filter');
  });
});
