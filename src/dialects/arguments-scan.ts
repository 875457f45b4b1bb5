// A tool call's arguments, streamed in fragments, read for whether they are whole JSON yet: the Responses and
// Anthropic stream renderers open one tool call at a time, and hold another call a provider interleaves with the open
// one until the open one's arguments are whole.

/** Whether a call's arguments so far are a whole JSON value (nothing more can follow them). */
export function wholeJson(args: string): boolean {
  if (args.trim() === '') return false;
  try {
    JSON.parse(args);
    return true;
  } catch {
    return false;
  }
}

/**
 * A call's arguments read as they stream, each character once, for whether they are whole JSON: an object or array is
 * parsed only once its brackets close. Parsing all of them at each delta of another call (a provider sending two
 * calls' arguments taking turns) was quadratic: seconds of a stalled event loop for arguments of a few hundred KB.
 */
export class ArgumentsScan {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private container = false;
  /** JSON.parse's verdict on the arguments as they were when last asked (null: changed since). */
  private verdict: boolean | null = null;

  add(delta: string): void {
    this.verdict = null;
    for (let i = 0; i < delta.length; i++) {
      const c = delta.charCodeAt(i);
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c /* \ */) this.escaped = true;
        else if (c === 0x22 /* " */) this.inString = false;
      } else if (c === 0x22) this.inString = true;
      else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
        this.depth++;
        this.container = true;
      } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) this.depth--;
    }
  }

  whole(args: string): boolean {
    // Brackets still open (or a string): more must follow. Otherwise (closed, or a bare value) JSON.parse says.
    if (this.container && (this.depth > 0 || this.inString)) return false;
    return (this.verdict ??= wholeJson(args));
  }
}
