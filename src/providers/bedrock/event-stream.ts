import { crc32 } from 'node:zlib';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import type { GatewayError } from '../../core/errors.js';
import { gatewayError } from '../../core/errors.js';
import { streamException } from './errors.js';

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** Prelude (total length, headers length, prelude CRC): the total length tells where a frame ends. */
const PRELUDE_BYTES = 12;

function headerString(headers: Record<string, { type: string; value: unknown }>, name: string): string | undefined {
  const header = headers[name];
  return header && header.type === 'string' ? (header.value as string) : undefined;
}

export function invalidStream(provider: string, what: string): GatewayError {
  return gatewayError('invalid_upstream_response', `${provider}: upstream sent ${what}`);
}

/**
 * Reads Bedrock's `application/vnd.amazon.eventstream` body (ConverseStream's and InvokeModelWithResponseStream's):
 * binary frames, CRC-checked by the codec and possibly split across network reads, each handed to `onEvent` with its
 * `:event-type` and its payload text. An exception frame (`throttlingException`, `modelStreamErrorException`, ...)
 * or an error frame throws the GatewayError its name documents (see streamException).
 */
export class EventStreamReader {
  /**
   * The reads not yet framed, in order. A frame cut across reads is joined once its last byte has come, not at each
   * read: joining the buffer to every read (64 KiB each) copied a 30 MB frame some 500 times, seconds of a stalled
   * event loop for one upstream's answer.
   */
  private reads: Buffer[] = [];
  private buffered = 0;
  /** Whether the pending frame's prelude passed its CRC, so its length can be trusted while the rest arrives. */
  private preludeChecked = false;

  constructor(
    private readonly provider: string,
    private readonly onEvent: (type: string, payload: string) => void,
  ) {}

  /** Bytes of a frame not complete yet: none once the stream ended properly. */
  get pendingBytes(): number {
    return this.buffered;
  }

  /** Reads every whole frame the bytes complete; a frame cut across reads waits for the rest. */
  push(bytes: Buffer): void {
    if (bytes.length > 0) {
      this.reads.push(bytes);
      this.buffered += bytes.length;
    }
    while (this.buffered >= PRELUDE_BYTES) {
      const head = this.head();
      // The prelude's own CRC is checked before its length is believed: a garbled length (a bit flipped by a proxy)
      // would otherwise swallow every later frame of the answer while the reader waits for bytes that never form
      // that frame, the client left without output until the upstream ends, then told of an early end.
      if (!this.preludeChecked) {
        if (crc32(head.subarray(0, 8)) !== head.readUInt32BE(8)) throw invalidStream(this.provider, 'an event-stream frame whose prelude fails its CRC');
        this.preludeChecked = true;
      }
      const total = head.readUInt32BE(0);
      if (total < PRELUDE_BYTES + 4) throw invalidStream(this.provider, 'an event-stream frame with a bad length');
      if (this.buffered < total) break;
      const all = this.joined();
      const rest = all.subarray(total);
      this.reads = rest.length > 0 ? [rest] : [];
      this.buffered = rest.length;
      this.preludeChecked = false;
      this.onFrame(all.subarray(0, total));
    }
  }

  /** The first read, or all of them joined when it is too short to hold a prelude. */
  private head(): Buffer {
    const first = this.reads[0] as Buffer;
    return first.length >= PRELUDE_BYTES ? first : this.joined();
  }

  /** The pending reads as one buffer (kept as the only read). */
  private joined(): Buffer {
    if (this.reads.length === 1) return this.reads[0] as Buffer;
    const all = Buffer.concat(this.reads, this.buffered);
    this.reads = [all];
    return all;
  }

  private onFrame(frame: Buffer): void {
    let message;
    try {
      message = codec.decode(frame);
    } catch {
      throw invalidStream(this.provider, 'a corrupt event-stream frame');
    }
    const messageType = headerString(message.headers, ':message-type') ?? 'event';
    const payload = toUtf8(message.body);
    if (messageType === 'exception') throw streamException(this.provider, headerString(message.headers, ':exception-type') ?? 'exception', payload);
    if (messageType === 'error') {
      const code = headerString(message.headers, ':error-code') ?? 'error';
      throw streamException(this.provider, code, JSON.stringify({ message: headerString(message.headers, ':error-message') ?? code }));
    }
    const type = headerString(message.headers, ':event-type');
    if (type) this.onEvent(type, payload);
  }
}
