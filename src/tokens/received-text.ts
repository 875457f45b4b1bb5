import { EXACT_CHARS, type TokenCounter } from './tokenizer.js';

/**
 * Text a client received, kept to count its tokens when the upstream reports no usage (a stream the client left,
 * one that broke off, a server that reports none).
 *
 * Bounded: a count encodes at most EXACT_CHARS characters exactly and estimates the rest anyway, so only that
 * much is kept; past it a stream's text is measured (its length) and let go. Without the bound an
 * upstream that streams without end (or for hours) grew the gateway's heap by everything it sent, the text held
 * twice over in small strings until the request ended.
 */
export class ReceivedText {
  private readonly parts: string[] = [];
  private kept = 0;
  private restChars = 0;

  add(text: string): void {
    if (text.length === 0) return;
    const room = EXACT_CHARS - this.kept;
    if (text.length <= room) {
      this.parts.push(text);
      this.kept += text.length;
      return;
    }
    let rest = text;
    if (room > 0) {
      // Never between the halves of a surrogate pair.
      const last = text.charCodeAt(room - 1);
      const cut = last >= 0xd800 && last <= 0xdbff ? room - 1 : room;
      this.parts.push(text.slice(0, cut));
      this.kept += cut;
      rest = text.slice(cut);
    }
    this.restChars += rest.length;
  }

  /** Characters kept (at most EXACT_CHARS). */
  get keptLength(): number {
    return this.kept;
  }

  /** Characters received in all. */
  get length(): number {
    return this.kept + this.restChars;
  }

  get empty(): boolean {
    return this.kept === 0 && this.restChars === 0;
  }

  /** Its tokens: the kept text counted (sharing the counter's budgets), what went past it at the kept text's rate. */
  tokens(counter: TokenCounter): number {
    if (this.empty) return 0;
    const kept = this.kept > 0 ? counter.text(this.parts.length === 1 ? (this.parts[0] as string) : this.parts.join('')) : 0;
    if (this.restChars === 0) return kept;
    counter.estimated = true;
    // At the kept text's tokens per character (it is EXACT_CHARS long, or nearly, whenever text went past it).
    return kept + Math.ceil((this.restChars * kept) / this.kept);
  }
}
