/**
 * What output moderation judges of an answer: everything the model wrote for the client to use, not only its
 * `content`. An answer that is only a tool call (content null, the words in the call's arguments: a `write_file`
 * with the text in it) had nothing judged, so it passed a blocking rule untouched. Read here: the content, a spoken
 * answer's transcript, a refusal, and each tool call's arguments (a custom tool's `input`, a legacy
 * `function_call`'s arguments). Reasoning is not judged: it goes with the answer a block withholds, but a model
 * reasoning its way to a refusal would read as unsafe.
 */
import type { ResponseEvent } from '../core/canonical.js';
import { isRecord } from '../core/is-record.js';
import { transcriptOf } from './audio-transcript.js';

/** Appends `text` to the piece of the answer named `key` (a stream's fragments of one text join in order). */
type Collect = (key: string, text: unknown) => void;

/** A message's or a delta's texts, each under its own key within `choice`. */
function collectMessage(message: unknown, choice: number, collect: Collect): void {
  if (!isRecord(message)) return;
  collect(`${choice}:content`, message.content);
  collect(`${choice}:transcript`, transcriptOf(message.audio));
  collect(`${choice}:refusal`, message.refusal);
  if (isRecord(message.function_call)) collect(`${choice}:function_call`, message.function_call.arguments);
  if (!Array.isArray(message.tool_calls)) return;
  message.tool_calls.forEach((call: unknown, position: number) => {
    if (!isRecord(call)) return;
    // A stream's fragments of one call share its index; a whole answer's calls are told apart by position.
    const at = `${choice}:tool:${typeof call.index === 'number' ? call.index : position}`;
    if (isRecord(call.function)) collect(at, call.function.arguments);
    if (isRecord(call.custom)) collect(at, call.custom.input);
  });
}

/** The text output moderation judges in a held answer: its whole completions' and its chunks' texts, one a line. */
export function moderatedText(held: readonly ResponseEvent[]): string {
  const pieces = new Map<string, string>();
  const collect: Collect = (key, text) => {
    if (typeof text === 'string' && text !== '') pieces.set(key, (pieces.get(key) ?? '') + text);
  };
  for (const event of held) {
    if (event.kind !== 'completion' && event.kind !== 'chunk') continue;
    const choices: readonly unknown[] = event.kind === 'completion' ? event.completion.choices : event.chunk.choices;
    choices.forEach((choice, position) => {
      if (!isRecord(choice)) return;
      const index = typeof choice.index === 'number' ? choice.index : position;
      collectMessage(event.kind === 'completion' ? choice.message : choice.delta, index, collect);
    });
  }
  return [...pieces.values()].join('\n');
}
