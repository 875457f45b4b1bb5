import { describe, expect, it } from 'vitest';
import { readCanonical } from '../../src/dialects/anthropic/lenient.js';
import type { MessagesRequest } from '../../src/dialects/anthropic/parse-request.js';
import type { GatewayError } from '../../src/core/errors.js';

function read(body: Record<string, unknown>) {
  return readCanonical({ model: 'm', max_tokens: 10, ...body } as MessagesRequest, 'm', {});
}

describe('the lenient read of a Messages body', () => {
  it('costs nothing and records nothing when the body translates whole', () => {
    const out = read({ messages: [{ role: 'user', content: 'hi' }] });
    expect(out.untranslatable).toBeNull();
    expect(out.request.messages).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it('leaves out what the canonical form cannot express and records the strict 400', () => {
    const out = read({
      tools: [{ type: 'web_search_20250305', name: 'web_search' }, { name: 'weather', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'search_result', source: 'x' }] },
        { role: 'assistant', content: [{ type: 'server_tool_use', id: 's', name: 'web_search', input: {} }, { type: 'text', text: 'found' }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'map' }, { type: 'image', source: { type: 'file', file_id: 'file_1' } }] }] },
      ],
    });
    expect(out.untranslatable?.param).toBe('messages.0.content.1.type');
    expect(out.untranslatable?.status).toBe(400);
    expect(out.request.messages).toEqual([
      { role: 'user', content: 'look' },
      { role: 'assistant', content: 'found' },
      { role: 'tool', tool_call_id: 't', content: 'map' },
    ]);
    expect(out.request.tools).toEqual([{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }]);
  });

  it('still refuses malformed input, before or after what it leaves out', () => {
    const refused = (body: Record<string, unknown>): GatewayError | null => {
      try {
        read(body);
        return null;
      } catch (err) {
        return err as GatewayError;
      }
    };
    const search = { type: 'web_search_20250305', name: 'web_search' };
    expect(refused({ tools: [search], messages: [{ role: 'user', content: 'x' }, { role: 'system', content: 'x' }] })?.param).toBe('messages.1.role');
    expect(refused({ tools: [search], tool_choice: { type: 'maybe' }, messages: [{ role: 'user', content: 'x' }] })?.param).toBe('tool_choice.type');
    expect(refused({ tools: [search, {}], messages: [{ role: 'user', content: 'x' }] })?.param).toBe('tools.1.name');
  });
});
