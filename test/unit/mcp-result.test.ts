import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/mcp/mcp-connection.js';
import { capResult, cutJsonString, cutUtf8 } from '../../src/mcp/mcp-result.js';

describe('capResult', () => {
  it('keeps a result within the limit as it is', () => {
    const capped = capResult([{ type: 'text', text: 'hello' }], { n: 1 }, 1_000);
    expect(capped).toEqual({ content: [{ type: 'text', text: 'hello' }], structuredContent: { n: 1 }, text: 'hello', resultBytes: expect.any(Number), truncated: false });
  });

  it('shortens the text block past the limit, leaves out what follows, and says so', () => {
    const content = [{ type: 'text', text: 'a'.repeat(50) }, { type: 'text', text: 'b'.repeat(500) }, { type: 'image', data: 'x'.repeat(400), mimeType: 'image/png' }];
    const capped = capResult(content, undefined, 400);
    expect(capped.truncated).toBe(true);
    expect(capped.resultBytes).toBeGreaterThan(900);
    expect(capped.content[0]).toEqual(content[0]);
    expect((capped.content[1] as { text: string }).text).toMatch(/^b+$/);
    expect(capped.content.at(-1)).toMatchObject({ type: 'text', text: expect.stringContaining('[truncated: 2 content block(s)') });
    expect(capped.content.some((block) => (block as { type: string }).type === 'image')).toBe(false);
    expect(Buffer.byteLength(capped.text)).toBeLessThanOrEqual(400);
    expect(Buffer.byteLength(JSON.stringify(capped.content))).toBeLessThanOrEqual(400);
    expect(capped.text).toContain('[truncated: the result was');
  });

  it('describes blocks that are not text, and uses the structured result when there is no content', () => {
    expect(capResult([{ type: 'image', data: 'AAAA', mimeType: 'image/png' }, { type: 'resource_link', uri: 'file:///a', name: 'a' }], undefined, 1_000).text).toBe('[image: image/png]\n[resource link: file:///a (a)]');
    expect(capResult([], { answer: 42 }, 1_000).text).toBe('{"answer":42}');
  });

  it('drops structured content that does not fit', () => {
    const capped = capResult([{ type: 'text', text: 'x'.repeat(100) }], { big: 'y'.repeat(500) }, 300);
    expect(capped.structuredContent).toBeUndefined();
    expect(capped.truncated).toBe(true);
  });

  it('keeps the content within the limit as JSON writes it: escapes, the array and the note counted', () => {
    for (const text of ['x'.repeat(5_000), '"'.repeat(5_000), '\u0001'.repeat(5_000), '\n'.repeat(5_000), '😀'.repeat(2_000), '\ud800'.repeat(3_000)]) {
      const capped = capResult([{ type: 'text', text: 'first' }, { type: 'text', text }, { type: 'text', text: 'left out' }], undefined, 1_000);
      expect(Buffer.byteLength(JSON.stringify(capped.content))).toBeLessThanOrEqual(1_000);
      expect(capped.content.at(-1)).toMatchObject({ text: expect.stringContaining('[truncated: 2 content block(s)') });
      // As much of the cut block as fits: the rest of the room is less than one more character.
      expect(Buffer.byteLength(JSON.stringify(capped.content))).toBeGreaterThan(1_000 - 8);
    }
  });

  it('cuts a text to the JSON bytes it takes, never splitting a character or an escape', () => {
    expect(cutJsonString('a"b', 2)).toBe('a');
    expect(cutJsonString('a"b', 3)).toBe('a"');
    expect(cutJsonString('\u0001x', 6)).toBe('\u0001');
    expect(cutJsonString('😀😀', 7)).toBe('😀');
    expect(cutJsonString('tab\there', 5)).toBe('tab\t');
  });

  it('never splits a character', () => {
    expect(cutUtf8('héé', 4)).toBe('hé');
    expect(cutUtf8('😀😀', 5)).toBe('😀');
  });
});

describe('backoffDelay', () => {
  it('doubles from the base up to the cap, with jitter in the upper half', () => {
    const options = { baseMs: 500, maxMs: 30_000 };
    expect(backoffDelay(1, options, () => 0)).toBe(250);
    expect(backoffDelay(1, options, () => 1)).toBe(500);
    expect(backoffDelay(3, options, () => 1)).toBe(2_000);
    expect(backoffDelay(20, options, () => 0)).toBe(15_000);
    expect(backoffDelay(20, options, () => 1)).toBe(30_000);
  });
});
