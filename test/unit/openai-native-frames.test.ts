import { describe, expect, it } from 'vitest';
import { openAINativeFramer, openAINativeJson } from '../../src/dialects/openai/native.js';
import { topLevelStringSpan } from '../../src/wire/json-text.js';

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

describe('openAINativeFramer', () => {
  const text = (data: string) => ({ format: 'openai', text: data });

  it('writes each event as it came but for the model, which shows the client’s name', () => {
    const frame = openAINativeFramer('openai/gpt-4o');
    expect(frame(text('{"id":"a","model":"gpt-4o-2024-08-06","x":1.50}'))).toBe('data: {"id":"a","model":"openai/gpt-4o","x":1.50}\n\n');
    // The next event with the same leading bytes, and then one whose leading bytes differ, are both right.
    expect(frame(text('{"id":"a","model":"gpt-4o-2024-08-06","v":"\\u00e9"}'))).toBe('data: {"id":"a","model":"openai/gpt-4o","v":"\\u00e9"}\n\n');
    expect(frame(text('{"id":"b","meta":{"model":"x"},"model":"other"}'))).toBe('data: {"id":"b","meta":{"model":"x"},"model":"openai/gpt-4o"}\n\n');
    expect(frame(text('{"id":"a","model":"gpt-4o-2024-08-06-x"}'))).toBe('data: {"id":"a","model":"openai/gpt-4o"}\n\n');
    expect(openAINativeFramer('a"b')(text('{"model":"m"}'))).toBe('data: {"model":"a\\"b"}\n\n');
  });

  it('leaves the bytes alone when the model already is the client’s', () => {
    const data = '{"model":"m","choices":[]}';
    expect(openAINativeFramer('m')(text(data))).toBe(`data: ${data}\n\n`);
  });

  it('spreads multi-line data over data: lines again', () => {
    expect(openAINativeFramer('m')(text('{"a":1,\n"model":"m"}'))).toBe('data: {"a":1,\ndata: "model":"m"}\n\n');
  });

  it('is null for another format, for no text, and for an event without a model field', () => {
    const frame = openAINativeFramer('m');
    expect(frame({ format: 'anthropic', text: '{"model":"m"}' })).toBeNull();
    expect(frame(undefined)).toBeNull();
    expect(frame({ format: 'openai' })).toBeNull();
    expect(frame(text('{"model":"m"}'))).not.toBeNull();
    expect(frame(text('{"id":"x"}'))).toBeNull();
    expect(frame(text('{"id":"x","meta":{"model":"m"}}'))).toBeNull();
  });
});

describe('openAINativeJson', () => {
  it('writes a whole answer as it came but for the model, null without text or model', () => {
    expect(openAINativeJson({ format: 'openai', text: '{ "model" : "x", "n": 1.0 }' }, 'p/x')).toBe('{ "model" : "p/x", "n": 1.0 }');
    expect(openAINativeJson({ format: 'openai', text: '{"data":[]}' }, 'm')).toBeNull();
    expect(openAINativeJson({ format: 'openai', body: {} }, 'm')).toBeNull();
    expect(openAINativeJson(undefined, 'm')).toBeNull();
  });
});
