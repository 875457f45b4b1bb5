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
  private buffer: Buffer = Buffer.alloc(0);

  constructor(
    private readonly provider: string,
    private readonly onEvent: (type: string, payload: string) => void,
  ) {}

  /** Bytes of a frame not complete yet: none once the stream ended properly. */
  get pendingBytes(): number {
    return this.buffer.length;
  }

  /** Reads every whole frame the bytes complete; a frame cut across reads waits for the rest. */
  push(bytes: Buffer): void {
    this.buffer = this.buffer.length === 0 ? bytes : Buffer.concat([this.buffer, bytes]);
    while (this.buffer.length >= PRELUDE_BYTES) {
      const total = this.buffer.readUInt32BE(0);
      if (total < PRELUDE_BYTES + 4) throw invalidStream(this.provider, 'an event-stream frame with a bad length');
      if (this.buffer.length < total) break;
      const frame = this.buffer.subarray(0, total);
      this.buffer = this.buffer.subarray(total);
      this.onFrame(frame);
    }
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
