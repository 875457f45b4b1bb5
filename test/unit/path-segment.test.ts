import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import { modelAllowed } from '../../src/routing/model-patterns.js';
import { nestsDeeperThan } from '../../src/http/json-body.js';
import { wrongPathHint } from '../../src/http/render-error.js';
import { pathSegment, urlPathProblem } from '../../src/path-segment.js';

describe('pathSegment', () => {
  it('escapes a name into one segment, keeping @ (Vertex Claude versions) and encoding / (Bedrock ARNs)', () => {
    expect(pathSegment('gemini-2.5-flash', 'X')).toBe('gemini-2.5-flash');
    expect(pathSegment('claude-sonnet-4@20250514', 'X')).toBe('claude-sonnet-4@20250514');
    expect(pathSegment('anthropic.claude-3-5-sonnet-20240620-v1:0', 'X')).toBe('anthropic.claude-3-5-sonnet-20240620-v1%3A0');
    expect(pathSegment('arn:aws:bedrock:us-east-1:123:inference-profile/us.x', 'X')).toBe('arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.x');
  });

  it.each(['..', '.', 'a/../b', 'a..b', 'a?b', 'a#b', 'a%2e%2e', 'a\\b', 'a\u0000b', 'a\nb', 'a\u007fb', ''])('refuses %j with a 400 on model', (name) => {
    let thrown: unknown = null;
    try {
      pathSegment(name, 'X');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(GatewayError);
    expect(thrown).toMatchObject({ status: 400, param: 'model', code: 'invalid_model_name' });
  });

  it('names the problem', () => {
    expect(urlPathProblem('x/../y')).toBe("holds '..'");
    expect(urlPathProblem('x?y')).toBe("holds '?'");
    expect(urlPathProblem('x\ty')).toBe('holds a control character (U+0009)');
    expect(urlPathProblem('gemini-2.5-flash')).toBeNull();
  });
});

describe('modelAllowed', () => {
  it('a * never stands for a path step, a query or a fragment', () => {
    const patterns = ['vertex/gemini-2.0-flash*', 'openrouter/*'];
    expect(modelAllowed(patterns, 'vertex/gemini-2.0-flash-001')).toBe(true);
    expect(modelAllowed(patterns, 'openrouter/meta-llama/llama-3.1-8b')).toBe(true);
    for (const bad of ['vertex/gemini-2.0-flash/../../x', 'vertex/gemini-2.0-flash?x', 'vertex/gemini-2.0-flash#x', 'vertex/gemini-2.0-flash%2F..', 'openrouter/../x']) {
      expect(modelAllowed(patterns, bad), bad).toBe(false);
    }
    expect(modelAllowed([], 'vertex/gemini-2.0-flash/../../x')).toBe(true);
  });
});

describe('nestsDeeperThan', () => {
  it('counts arrays and objects, not scalars, without recursion at any depth', () => {
    const deep = (n: number) => JSON.parse('['.repeat(n) + ']'.repeat(n)) as unknown;
    expect(nestsDeeperThan(deep(128), 128)).toBe(false);
    expect(nestsDeeperThan(deep(129), 128)).toBe(true);
    expect(nestsDeeperThan(deep(200_000), 128)).toBe(true);
    expect(nestsDeeperThan({ a: [1, 'x', { b: null }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [1, 'x', { b: [] }] }, 3)).toBe(true);
    expect(nestsDeeperThan('text', 0)).toBe(false);
  });
});

describe('wrongPathHint', () => {
  const base = 'http://gw:8080';
  it.each([
    ['/v1/messages', 'use the /anthropic base URL (http://gw:8080/anthropic)'],
    ['/messages/count_tokens', 'use the /anthropic base URL'],
    ['/v1/responses', null],
    ['/v1/responses/resp_1/unknown', null],
    ['/v1/completions', null],
    ['/litellm/completions', 'The legacy Completions API is served at http://gw:8080/v1/completions.'],
    ['/v1beta/models/gemini-2.5-flash:generateContent', 'use the /genai base URL (http://gw:8080/genai)'],
    ['/v1beta/tunedModels/x:generateContent', 'use the /genai base URL'],
    ['/v1beta/models/x', null],
    ['/litellm/responses', 'The Responses API is served at http://gw:8080/v1/responses.'],
    ['/v1/nothing', null],
  ])('%s', (path, hint) => {
    const found = wrongPathHint(path, base);
    if (hint === null) expect(found).toBeNull();
    else expect(found).toContain(hint);
  });
});
