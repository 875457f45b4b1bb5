import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';

/** What SignatureV4 hands a hash: its body, a key, a text. */
type SourceData = string | ArrayBuffer | ArrayBufferView;

function bytesOf(data: SourceData): string | Uint8Array {
  if (typeof data === 'string') return data;
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(data);
}

/**
 * SHA-256 (or its HMAC, given a secret) for SignatureV4 from Node's own crypto. SigV4 hashes the whole body: a
 * SHA-256 written in JavaScript (@aws-crypto/sha256-js) holds the event loop 40-80 ms a megabyte, on every attempt,
 * and a long Claude Code session sends megabytes a turn; Node's takes a few.
 */
export class NodeSha256 {
  private hash: Hash | Hmac;

  constructor(private readonly secret?: SourceData) {
    this.hash = this.fresh();
  }

  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', bytesOf(this.secret));
  }

  update(data: SourceData): void {
    this.hash.update(bytesOf(data));
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }

  reset(): void {
    this.hash = this.fresh();
  }
}
