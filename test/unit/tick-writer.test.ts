import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { TickWriter } from '../../src/http/answer-stream.js';

/**
 * The event stream's writer joins a tick's texts into one write (one HTTP chunk instead of one per event), and never
 * lets a text it holds fall behind what the dialect writes itself once the answer ends.
 */

/** A response that records what it is given, in order. */
function recorder(): { res: ServerResponse; writes: string[] } {
  const writes: string[] = [];
  const res = {
    writableEnded: false,
    destroyed: false,
    writableLength: 0,
    writableHighWaterMark: 64,
    get writableNeedDrain() {
      return this.writableLength >= this.writableHighWaterMark;
    },
    write(text: string) {
      writes.push(text);
      // Nothing drains: the client reads nothing.
      this.writableLength += text.length;
      return !this.writableNeedDrain;
    },
    end(text?: string) {
      if (text !== undefined) writes.push(`end:${text}`);
      this.writableEnded = true;
    },
  };
  return { res: res as unknown as ServerResponse, writes };
}

const tick = () => new Promise<void>((done) => process.nextTick(done));

describe('TickWriter', () => {
  it("writes a tick's texts once, joined in order, at the tick's end or when flushed", async () => {
    const { res, writes } = recorder();
    let touched = 0;
    const writer = new TickWriter(res, () => touched++);
    writer.write('data: 1\n\n');
    writer.write('data: 2\n\n');
    expect(writes).toEqual([]);
    await tick();
    expect(writes).toEqual(['data: 1\n\ndata: 2\n\n']);
    expect(touched).toBe(1);
    writer.write('data: 3\n\n');
    writer.flush();
    expect(writes).toEqual(['data: 1\n\ndata: 2\n\n', 'data: 3\n\n']);
    await tick();
    // The tick's flush found nothing left: no empty write, no keep-alive touch.
    expect(writes).toHaveLength(2);
    expect(touched).toBe(2);
  });

  it("counts what it holds in the backpressure check, writing it at once only when it would fill the socket's buffer", async () => {
    const { res, writes } = recorder();
    const writer = new TickWriter(res);
    // Each event of a read is checked after it (the call stage's check): small ones stay joined for the tick's end.
    writer.write('data: 1\n\n');
    expect(writer.backedUp()).toBe(false);
    writer.write('data: 2\n\n');
    expect(writer.backedUp()).toBe(false);
    expect(writes).toEqual([]);
    writer.write(`data: ${'x'.repeat(60)}\n\n`);
    expect(writer.backedUp()).toBe(true);
    expect(writes).toEqual([`data: 1\n\ndata: 2\n\ndata: ${'x'.repeat(60)}\n\n`]);
    await tick();
    expect(writes).toHaveLength(1);
  });

  it('once ended, writes what it held and every later text at once, before the end the dialect writes', () => {
    const { res, writes } = recorder();
    const writer = new TickWriter(res);
    writer.write('data: 1\n\n');
    writer.end();
    writer.write('data: last\n\n');
    res.end('data: [DONE]\n\n');
    expect(writes).toEqual(['data: 1\n\n', 'data: last\n\n', 'end:data: [DONE]\n\n']);
  });

  it('writes nothing after the response ended', async () => {
    const { res, writes } = recorder();
    const writer = new TickWriter(res);
    writer.write('data: 1\n\n');
    res.end();
    await tick();
    expect(writes).toEqual([]);
  });
});
