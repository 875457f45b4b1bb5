/**
 * A spoken answer (OpenAI's audio output, `modalities: ["audio"]`) carries its words in `message.audio.transcript`,
 * streamed as `delta.audio.transcript` pieces between the base64 `delta.audio.data` pieces, with `content` null: the
 * output rules read that transcript as a text of its own. The audio data is passed as it came (speech cannot be
 * redacted); a block withholds the rest of it with the transcript.
 */
import { isRecord } from '../core/is-record.js';

/** The transcript `audio` (a message's or a delta's `audio`) carries, or null. */
export function transcriptOf(audio: unknown): string | null {
  return isRecord(audio) && typeof audio.transcript === 'string' ? audio.transcript : null;
}

/**
 * A delta's `audio` carrying `transcript` instead of its own (none when ''), its other fields kept; undefined when
 * nothing is left to send.
 */
export function withTranscript(audio: Record<string, unknown>, transcript: string): Record<string, unknown> | undefined {
  const { transcript: _own, ...rest } = audio;
  const out = transcript === '' ? rest : { ...rest, transcript };
  return Object.keys(out).length === 0 ? undefined : out;
}

/** What of a delta's `audio` survives a block of its choice: the transcript released before the block, no more audio. */
export function blockedAudio(audio: unknown): Record<string, unknown> | undefined {
  const transcript = transcriptOf(audio);
  return transcript ? { transcript } : undefined;
}

/** `delta.audio` set to `audio`, or removed when undefined. */
export function setAudio(delta: Record<string, unknown>, audio: Record<string, unknown> | undefined): void {
  if (audio === undefined) delete delta.audio;
  else delta.audio = audio;
}
