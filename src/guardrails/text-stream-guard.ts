import type { Finding } from './types.js';

/** One step of a stream guard: the text safe to send now, what matched, and the block that stops the text, if any. */
export interface StreamStep {
  release: string;
  findings: Finding[];
  blocked: Finding | null;
}

/** The guard of one text stream (a choice's content, one tool call's arguments, a content block's text). */
export interface TextStreamGuard {
  push(delta: string): StreamStep;
  end(): StreamStep;
  /** Characters pushed and not yet released (nor dropped by a block). */
  readonly held: number;
}
