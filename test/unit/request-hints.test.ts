import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { createRequestContext } from '../../src/core/context.js';
import { contextKey, Extensions } from '../../src/core/extensions.js';
import { NO_HINTS, parseRequestHints } from '../../src/core/hints.js';

const config = resolveRuntimeConfig({ api: {}, file: {} }, {}, 1);

describe('request hints', () => {
  it('reads cache-control directives, a valid traceparent with its tracestate, and x-tollgate-* headers', () => {
    const hints = parseRequestHints({
      'cache-control': 'no-cache, Max-Age="30", s-maxage=5',
      traceparent: '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      tracestate: 'rojo=00f067aa0ba902b7',
      'x-tollgate-cache': 'off',
      'x-tollgate-mcp': ['search', 'files'],
      'x-other': 'ignored',
    });
    expect([...hints.cacheControl]).toEqual([
      ['no-cache', true],
      ['max-age', '30'],
      ['s-maxage', '5'],
    ]);
    expect(hints.traceparent).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(hints.tracestate).toBe('rojo=00f067aa0ba902b7');
    expect([...hints.tollgate]).toEqual([
      ['cache', 'off'],
      ['mcp', 'search, files'],
    ]);
  });

  it('drops a malformed traceparent (and its tracestate), and all-zero ids', () => {
    for (const traceparent of ['garbage', '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', '00-00000000000000000000000000000000-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01']) {
      const hints = parseRequestHints({ traceparent, tracestate: 'a=b' });
      expect(hints.traceparent).toBeNull();
      expect(hints.tracestate).toBeNull();
    }
  });

  it('ignores oversized values, and shares one empty answer when nothing applies', () => {
    expect(parseRequestHints({ 'cache-control': 'x'.repeat(5000), 'x-tollgate-a': 'y'.repeat(5000) })).toBe(NO_HINTS);
    expect(parseRequestHints({ accept: 'application/json' })).toBe(NO_HINTS);
  });

  it('reach every stage through the context, whatever the dialect', () => {
    const ctx = createRequestContext({ dialect: 'anthropic', config, request: { model: 'm', messages: [] }, clientHeaders: { 'x-tollgate-trace': '1' } });
    expect(ctx.hints.tollgate.get('trace')).toBe('1');
    expect(createRequestContext({ dialect: 'openai', config, request: { model: 'm', messages: [] } }).hints).toBe(NO_HINTS);
  });
});

describe('typed context extensions', () => {
  it('keeps values by key id, so two copies of a key meet', () => {
    const extensions = new Extensions();
    const score = contextKey<number>('plugin.score');
    expect(extensions.get(score)).toBeUndefined();
    expect(extensions.has(score)).toBe(false);
    extensions.set(score, 0.75);
    expect(extensions.get(contextKey<number>('plugin.score'))).toBe(0.75);
    expect(extensions.delete(score)).toBe(true);
    expect(extensions.has(score)).toBe(false);
  });

  it('a context starts with its own empty extensions and an operation', () => {
    const chat = createRequestContext({ dialect: 'openai', config, request: { model: 'm', messages: [], stream: true } });
    const embeddings = createRequestContext({ dialect: 'openai', config, operation: 'embeddings', request: { model: 'm', input: 'hi', stream: true } });
    expect([chat.operation, chat.stream]).toEqual(['chat', true]);
    // An embeddings request never streams, whatever its body says.
    expect([embeddings.operation, embeddings.stream]).toEqual(['embeddings', false]);
    expect(chat.extensions).not.toBe(embeddings.extensions);
  });
});
