import { describe, expect, it } from 'vitest';
import type { FastifyRequest } from 'fastify';
import { hasExactNumbers, parseExactly, restoreExactNumbers } from '../../src/exact-numbers.js';
import { parseJsonBody } from '../../src/http/json-body.js';

function parsed(text: string, url = '/v1/chat/completions'): unknown {
  let out: unknown;
  parseJsonBody({ url } as FastifyRequest, text, (err, value) => {
    if (err) throw err;
    out = value;
  });
  return out;
}

/** What the call stage does: serialise whatever the adapter built, then restore the client's digits. */
function roundTrip(text: string): string {
  return restoreExactNumbers(JSON.stringify(parseExactly(text)));
}

describe('exact numbers', () => {
  it('the body parser takes the lossless path only for a number JSON.parse may have rounded, and not on /api', () => {
    expect(hasExactNumbers(parsed('{"seed":123456789012345,"t":0.7,"n":[1,2,{"x":-3.25}],"s":"12345678901234567890"}'))).toBe(false);
    expect(hasExactNumbers(parsed('{"seed":9223372036854775807}'))).toBe(true);
    expect(hasExactNumbers(parsed('{"deep":[[[{"p":0.12345678901234567890}]]]}'))).toBe(true);
    expect(hasExactNumbers(parsed('{"budget":9223372036854775807}', '/api/keys'))).toBe(false);
  });

  it('keeps integers past 2^53 digit for digit, negative ones too', () => {
    expect(roundTrip('{"seed":9223372036854775807,"b":-9223372036854775808}')).toBe('{"seed":9223372036854775807,"b":-9223372036854775808}');
    // The plain path is what this fixes.
    expect(JSON.stringify(JSON.parse('{"seed":9223372036854775807}'))).toBe('{"seed":9223372036854776000}');
  });

  it('keeps long decimals and exponents as written, and leaves exact numbers as numbers', () => {
    const text = '{"a":0.12345678901234567890,"b":1.2345678901234567e+300,"c":12345678901234567e-5,"d":0.5,"e":42,"f":9007199254740991}';
    expect(roundTrip(text)).toBe(text);
    const value = parseExactly(text) as Record<string, unknown>;
    expect(value.d).toBe(0.5);
    expect(value.e).toBe(42);
    // 2^53 - 1 is exact as a double: it stays a number tollgate can read.
    expect(value.f).toBe(9007199254740991);
    expect(typeof value.a).toBe('string');
  });

  it('finds numbers anywhere, and never touches digits inside strings', () => {
    const text = '{"messages":[{"role":"user","content":"card 4111111111111111111 ok"}],"tools":[[{"x":[12345678901234567890]}]]}';
    expect(roundTrip(text)).toBe(text);
    const value = parseExactly(text) as { messages: Array<{ content: string }> };
    expect(value.messages[0]?.content).toBe('card 4111111111111111111 ok');
  });

  it('marks only bodies that needed it, and a look-alike marker from a client stays a string', () => {
    const plain = parseExactly('{"content":"0000000000000000"}');
    expect(hasExactNumbers(plain)).toBe(false);
    expect(hasExactNumbers(parseExactly('{"seed":12345678901234567890}'))).toBe(true);
    const forged = '{"content":"tollgate-exact-number:0000000000000000:12345678901234567890"}';
    expect(roundTrip(forged)).toBe(forged);
  });
});
