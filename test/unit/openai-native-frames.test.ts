import { describe, expect, it } from 'vitest';
import { openAINativeFrames, topLevelStringSpan } from '../../src/dialects/openai/native.js';

const valueAt = (text: string, key: string): string | null => {
  const span = topLevelStringSpan(text, key);
  return span ? text.slice(span[0], span[1]) : null;
};

describe('topLevelStringSpan', () => {
  it('finds the top-level field as written, escapes included', () => {
    expect(valueAt('{"id":"a","model":"gpt-4o"}', 'model')).toBe('"gpt-4o"');
    expect(valueAt('{"model":"a\\/b\\"c\\\\"}', 'model')).toBe('"a\\/b\\"c\\\\"');
    expect(valueAt(' { "model" :\n "m" } ', 'model')).toBe('"m"');
  });

  it('skips a nested object’s key of the same name and the same text inside strings', () => {
    const text = '{"meta":{"model":"inner"},"note":"\\"model\\":\\"fake\\"","list":[{"model":"x"}],"model":"outer"}';
    expect(valueAt(text, 'model')).toBe('"outer"');
    expect(valueAt('{"a":"x\\\\","model":"m"}', 'model')).toBe('"m"');
  });

  it('is null when the field is absent at the top level or not a string', () => {
    expect(valueAt('{"meta":{"model":"inner"}}', 'model')).toBeNull();
    expect(valueAt('{"model":null}', 'model')).toBeNull();
    expect(valueAt('{"model":{"name":"m"}}', 'model')).toBeNull();
    expect(valueAt('{"models":"m","mode":"n"}', 'model')).toBeNull();
  });
});

describe('openAINativeFrames', () => {
  const native = (...data: string[]) => ({ format: 'openai', events: data.map((d) => ({ event: '', data: d })) });

  it('writes the events as they came but for the model, which shows the client’s name', () => {
    expect(openAINativeFrames(native('{"model":"gpt-4o-2024-08-06","x":1.50}'), 'openai/gpt-4o')).toBe('data: {"model":"openai/gpt-4o","x":1.50}\n\n');
    expect(openAINativeFrames(native('{"model":"m","v":"\\u00e9"}'), 'm')).toBe('data: {"model":"m","v":"\\u00e9"}\n\n');
    expect(openAINativeFrames(native('{"model":"m"}'), 'a"b')).toBe('data: {"model":"a\\"b"}\n\n');
  });

  it('keeps an event name and spreads multi-line data over data: lines again', () => {
    const answer = { format: 'openai', events: [{ event: 'chunk', data: '{"a":1,\n"model":"m"}' }] };
    expect(openAINativeFrames(answer, 'm')).toBe('event: chunk\ndata: {"a":1,\ndata: "model":"m"}\n\n');
  });

  it('is null for another format, for no events, and when an event has no model field', () => {
    expect(openAINativeFrames({ format: 'anthropic', events: [{ event: 'ping', data: '{"model":"m"}' }] }, 'm')).toBeNull();
    expect(openAINativeFrames(undefined, 'm')).toBeNull();
    expect(openAINativeFrames({ format: 'openai' }, 'm')).toBeNull();
    expect(openAINativeFrames(native('{"model":"m"}', '{"id":"x"}'), 'm')).toBeNull();
  });
});
