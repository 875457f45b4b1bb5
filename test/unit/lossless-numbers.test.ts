import { describe, expect, it } from 'vitest';
import type { FastifyRequest } from 'fastify';
import { hasExactNumbers, parseExactly, restoreExactNumbers } from '../../src/exact-numbers.js';
import { parseJsonBody } from '../../src/http/json-body.js';
import type { GatewayError } from '../../src/core/errors.js';

function outcome(text: string, url = '/v1/chat/completions'): Promise<{ err: Error | null; value: unknown }> {
  // A long body is parsed over several turns of the event loop (json-body.ts), so the answer may come later.
  return new Promise((resolve) => parseJsonBody({ url } as FastifyRequest, text, (err, value) => resolve({ err, value })));
}

async function parsed(text: string, url = '/v1/chat/completions'): Promise<unknown> {
  const { err, value } = await outcome(text, url);
  if (err) throw err;
  return value;
}

/** What the gateway does: the body parser, an adapter serialising what it built, the call stage's restore. */
async function roundTrip(text: string): Promise<string> {
  return restoreExactNumbers(JSON.stringify(await parsed(text)));
}

describe('lossless numbers: which bodies take the lossless path', () => {
  it('only a body with a number JSON.parse may have rounded, and never on the admin API', async () => {
    expect(hasExactNumbers(await parsed('{"seed":123456789012345,"t":0.7,"n":[1,2,{"x":-3.25}],"s":"12345678901234567890"}'))).toBe(false);
    expect(hasExactNumbers(await parsed('{"seed":9223372036854775807}'))).toBe(true);
    expect(hasExactNumbers(await parsed('{"deep":[[[{"p":0.12345678901234567890}]]]}'))).toBe(true);
    expect(hasExactNumbers(await parsed('{"big":1e400}'))).toBe(true);
    expect(hasExactNumbers(await parsed('{"tiny":2.5e-324}'))).toBe(true);
    const admin = await parsed('{"budget":9223372036854775807}', '/api/keys') as { budget: unknown };
    expect(hasExactNumbers(admin)).toBe(false);
    expect(admin.budget).toBe(2 ** 63);
  });

  it('the common body is JSON.parse\'s own value', async () => {
    const text = '{"model":"m","messages":[{"role":"user","content":"hi"}],"seed":12345,"temperature":0.7}';
    expect(await parsed(text)).toEqual(JSON.parse(text));
  });
});

describe('lossless numbers: parse and restore', () => {
  it('keeps integers past 2^53 digit for digit, negative ones too', async () => {
    expect(await roundTrip('{"seed":9223372036854775807,"b":-9223372036854775808}')).toBe('{"seed":9223372036854775807,"b":-9223372036854775808}');
    // The plain path is what this fixes.
    expect(JSON.stringify(JSON.parse('{"seed":9223372036854775807}'))).toBe('{"seed":9223372036854776000}');
  });

  it('keeps long decimals, exponents, overflow and underflow as written', async () => {
    const text = '{"a":0.12345678901234567890,"b":1.2345678901234567e+300,"c":12345678901234567e-4,"d":1e400,"e":-1E+400,"f":2.5e-324,"g":1e-400,"h":[9223372036854775807]}';
    expect(await roundTrip(text)).toBe(text);
    // The same decimal in another spelling is what the upstream gets (as for any number on the common path).
    expect(await roundTrip('{"x":9223372036854775807,"c":12345678901234567e-5}')).toBe('{"x":9223372036854775807,"c":123456789012.34567}');
  });

  it('an integer comes back as the same digits, never in exponent form', async () => {
    // 1e23 is the double closest to this, and String() writes it as "1e+23": a float to a Python upstream.
    expect(await roundTrip('{"id":100000000000000000000000,"x":9223372036854775807}')).toBe('{"id":100000000000000000000000,"x":9223372036854775807}');
  });

  it('leaves numbers a double holds exactly as plain numbers', async () => {
    const value = parseExactly('{"a":9223372036854775807,"d":0.5,"e":42,"f":9007199254740991,"g":1.50,"h":1E5,"i":9007199254740992}') as Record<string, unknown>;
    expect(value.d).toBe(0.5);
    expect(value.e).toBe(42);
    expect(value.f).toBe(9007199254740991);
    // Same decimal, another spelling: a number tollgate can read.
    expect(value.g).toBe(1.5);
    expect(value.h).toBe(100000);
    // A long but exact integer: 2^53.
    expect(value.i).toBe(9007199254740992);
    expect(typeof value.a).toBe('string');
  });

  it('finds numbers in nested arrays, and never touches digits inside strings', async () => {
    const text = '{"messages":[{"role":"user","content":"card 4111111111111111111 ok, 9223372036854775807"}],"tools":[[{"x":[12345678901234567890,[[-98765432109876543210]]]}]]}';
    expect(await roundTrip(text)).toBe(text);
    const value = parseExactly(text) as { messages: Array<{ content: string }> };
    expect(value.messages[0]?.content).toBe('card 4111111111111111111 ok, 9223372036854775807');
    // Escaped quotes and backslashes around digits, keys with digits, a long string: still strings, as written.
    const escaped = '{"a\\"12345678901234567890":"x \\" 98765432109876543210 \\\\","x":-12345678901234567890.5e-3,"long":"' + '7'.repeat(1_000_000) + '"}';
    expect(await roundTrip(escaped)).toBe(escaped);
  });

  it('a __proto__ key stays an own property, as with JSON.parse', async () => {
    const value = parseExactly('{"__proto__":{"polluted":12345678901234567890},"seed":9223372036854775807}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__', 'seed']);
  });

  it('a string that looks like a marker stays a string', async () => {
    const forged = '{"seed":9223372036854775807,"content":"tollgate-exact-number:0000000000000000:12345678901234567890"}';
    expect(await roundTrip(forged)).toBe(forged);
    expect(hasExactNumbers(parseExactly('{"content":"0000000000000000"}'))).toBe(false);
  });

  it('a number that ended up inside another string (tool arguments) or in a text keeps its digits there', async () => {
    const input = (parseExactly('{"input":{"n":123456789012345678901234,"m":[1e400]}}') as { input: Record<string, unknown> }).input;
    const built = JSON.stringify({
      arguments: JSON.stringify(input),
      twice: JSON.stringify({ a: JSON.stringify(input) }),
      text: `n=${String(input.n)}`,
    });
    expect(JSON.parse(restoreExactNumbers(built))).toEqual({
      arguments: '{"n":123456789012345678901234,"m":[1e400]}',
      twice: '{"a":"{\\"n\\":123456789012345678901234,\\"m\\":[1e400]}"}',
      text: 'n=123456789012345678901234',
    });
  });

  it('restores in one pass whatever runs of backslashes the body holds (a regular expression backtracked over them)', async () => {
    const marker = (JSON.parse(JSON.stringify(parseExactly('{"seed":9223372036854775807}'))) as { seed: string }).seed;
    const prefix = marker.slice(0, marker.length - '9223372036854775807'.length);
    // The rule the restore follows, as the regular expression it replaced wrote it (run on small inputs only).
    const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const reference = new RegExp(`(\\\\*)"${escape(prefix)}(-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\\1"|${escape(prefix)}`, 'g');
    const pieces = ['\\', '"', prefix, '12', '3.5', 'x', ' '];
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    for (let i = 0; i < 3_000; i++) {
      const text = Array.from({ length: 1 + Math.floor(random() * 12) }, () => pieces[Math.floor(random() * pieces.length)]).join('');
      expect(restoreExactNumbers(text), JSON.stringify(text)).toBe(text.replace(reference, (_m, _e: string | undefined, token: string | undefined) => token ?? ''));
    }
    // A body with a number kept exact and 100,000 backslashes in a text (about 200 KB): one pass takes a millisecond
    // or two; the expression took 17 s, holding the event loop. A hang guard with a bound a hundred times the need.
    const body = JSON.stringify({ seed: marker, text: '\\'.repeat(100_000) + 'x' });
    const started = performance.now();
    expect(restoreExactNumbers(body)).toBe(`{"seed":9223372036854775807,"text":${JSON.stringify('\\'.repeat(100_000) + 'x')}}`);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('duplicate keys keep the last value, as JSON.parse does', async () => {
    expect(await roundTrip('{"seed":9223372036854775807,"user":"a","user":"b"}')).toBe('{"seed":9223372036854775807,"user":"b"}');
  });

  it('the fields tollgate reads stay plain numbers, so their checks see a number, never a marker', async () => {
    const value = await parsed(
      '{"seed":9223372036854775807,"max_tokens":99999999999999999999,"n":18446744073709551616,"temperature":0.70000000000000000001,' +
        '"generationConfig":{"maxOutputTokens":99999999999999999999,"responseSchema":{"maximum":99999999999999999999}},"thinking":{"type":"enabled","budget_tokens":99999999999999999999}}',
    ) as Record<string, Record<string, unknown>>;
    expect(value.max_tokens).toBe(1e20);
    expect(value.n).toBe(18446744073709551616);
    expect(value.temperature).toBe(0.7);
    expect(value.generationConfig?.maxOutputTokens).toBe(1e20);
    expect(value.thinking?.budget_tokens).toBe(1e20);
    // Not read by tollgate: exact.
    expect(typeof value.seed).toBe('string');
    expect(typeof (value.generationConfig?.responseSchema as Record<string, unknown>).maximum).toBe('string');
    // Only the interpreted fields needed it: nothing left to restore.
    expect(hasExactNumbers(await parsed('{"max_tokens":99999999999999999999}'))).toBe(false);
  });
});

describe('lossless numbers: bad bodies keep their errors', () => {
  it('deep nesting with a long number is still json_too_deep, not a stack overflow', async () => {
    for (const depth of [200, 20_000]) {
      const { err } = await outcome(`{"x":${'['.repeat(depth)}12345678901234567890${']'.repeat(depth)}}`);
      expect((err as GatewayError).status).toBe(400);
      expect((err as GatewayError).code).toBe('json_too_deep');
    }
    // Just inside the limit: parsed losslessly (the recursive parser copes with it).
    expect(await roundTrip(`{"x":${'['.repeat(126)}12345678901234567890${']'.repeat(126)}}`)).toBe(`{"x":${'['.repeat(126)}12345678901234567890${']'.repeat(126)}}`);
  });

  it('invalid JSON with a long number is still invalid_json', async () => {
    const { err } = await outcome('{"seed":9223372036854775807,}');
    expect((err as GatewayError).status).toBe(400);
    expect((err as GatewayError).code).toBe('invalid_json');
  });
});
