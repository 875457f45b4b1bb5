import { isRecord } from '../../core/is-record.js';

/** One choice's calls so far: the index each call got, by the index the server gave it, and the id of each. */
interface ChoiceCalls {
  byServerIndex: Map<number, number>;
  ids: Array<string | undefined>;
}

function idOf(call: Record<string, unknown>): string | undefined {
  return typeof call.id === 'string' && call.id !== '' ? call.id : undefined;
}

/**
 * Numbers a stream's tool calls as OpenAI does (0, 1, 2, ... per choice), for servers that do not: Ollama gives
 * every call of a parallel batch index 0 (ollama/ollama#15457), some servers give none (ollama/ollama#7881). Every
 * reader of the canonical chunks (the /anthropic and /genai renderers, the answer the cache and the log keep) puts
 * a delta in the call its index names, so such calls ran together into one call with their arguments concatenated.
 * A call's first delta carries its id (OpenAI's SDK relies on that too): a delta naming another id than the call at
 * its index starts a new call, a delta without an index continues the last call unless it names a new id. A stream
 * that numbers its calls already is left as it came (nothing is copied).
 */
export function createToolCallNumbering(): (choices: unknown[]) => void {
  const byChoice = new Map<number, ChoiceCalls>();
  return (choices) => {
    for (const choice of choices) {
      if (!isRecord(choice) || !isRecord(choice.delta) || !Array.isArray(choice.delta.tool_calls)) continue;
      const key = typeof choice.index === 'number' ? choice.index : 0;
      let calls = byChoice.get(key);
      if (!calls) byChoice.set(key, (calls = { byServerIndex: new Map(), ids: [] }));
      for (const call of choice.delta.tool_calls) if (isRecord(call)) number(call, calls);
    }
  };
}

function number(call: Record<string, unknown>, calls: ChoiceCalls): void {
  const id = idOf(call);
  const given = typeof call.index === 'number' ? call.index : undefined;
  const last = calls.ids.length - 1;
  let at = given === undefined ? (last >= 0 ? last : undefined) : calls.byServerIndex.get(given);
  const known = at === undefined ? undefined : calls.ids[at];
  // A new call: none yet at this index, or one under another id.
  if (at === undefined || (id !== undefined && known !== undefined && known !== id)) {
    at = calls.ids.length;
    calls.ids.push(id);
    if (given !== undefined) calls.byServerIndex.set(given, at);
  } else if (known === undefined && id !== undefined) {
    calls.ids[at] = id;
  }
  if (call.index !== at) call.index = at;
}
