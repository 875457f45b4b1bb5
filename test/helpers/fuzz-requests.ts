// Generates hostile HTTP requests for the fuzz test (test/e2e/fuzz.test.ts). Request i of a run depends only on
// the run's seed and i, so any one request reproduces on its own (FUZZ_SEED=<seed> FUZZ_ONLY=<i>).

/** Whose error shape a path answers in. */
export type Family = 'openai' | 'anthropic' | 'genai';

export interface FuzzRequest {
  index: number;
  /** Which generator made it (for grouping failures). */
  kind: string;
  family: Family;
  method: string;
  /** Sent verbatim as the request target. */
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** When set, these exact bytes are written to a socket instead (framing and bytes no HTTP client sends). */
  raw?: Buffer;
}

/** Placeholders the runner replaces with the live virtual key and admin key. */
export const VIRTUAL_KEY = '<virtual-key>';
export const ADMIN_KEY = '<admin-key>';

export interface Rng {
  next(): number;
  int(n: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
}

/** mulberry32: a tiny seeded PRNG (32-bit state), good enough to vary inputs reproducibly. */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)]!,
  };
}

/** The PRNG of request i of a run. */
export function rngFor(seed: number, index: number): Rng {
  return mulberry32((seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Values

const LONG = 'x'.repeat(100_000);
/** 100 KB without a break: the tokenizer's worst case once. */
const LONG_WORD = 'ab'.repeat(50_000);
const MANY_WORDS = 'lorem ipsum '.repeat(8_000);

const HOSTILE_NAMES: readonly string[] = [
  '\u0000',
  'openai/gpt\u0000x',
  'openai/gpt-4o\r\nX-Injected: 1',
  '\r\nX-Injected: 1',
  'gpt-4o\nX-Injected: 1',
  'openai/\ud800',
  '\udfff',
  'openai/gpt-€',
  'openai/gpt-é',
  'anthropic/claude-€',
  'gemini/gemini-€',
  'openai/gpt\t4o',
  '../',
  '../../v1/files',
  'gemini/../../../v1/files?x=',
  'gemini/gemini-2.0-flash?alt=sse',
  'gemini/gemini#frag',
  'gemini/..%2F..%2Fx',
  'vertex/gemini-2.0-flash/../../x',
  'azure/../x',
  'bedrock/a/../../b',
  'openai/%00',
  '%00',
  '?',
  '#',
  '',
  ' ',
  '/',
  '//',
  'openai/',
  '/gpt-4o',
  'openai//x',
  '*',
  'openai/*',
  'nope/model',
  'anthropic/',
  'claude-\u2028',
  'a'.repeat(257),
  `openai/${'x'.repeat(300)}`,
  `openai/${'€'.repeat(1000)}`,
];

function hostileName(r: Rng): string {
  if (r.chance(0.04)) return r.pick([LONG, `openai/${LONG}`, `anthropic/${LONG}`]);
  if (r.chance(0.1)) return randomString(r, 1 + r.int(40));
  return r.pick(HOSTILE_NAMES);
}

/** A string of random code units, lone surrogates and controls included. */
function randomString(r: Rng, length: number): string {
  let s = '';
  for (let i = 0; i < length; i++) {
    const range = r.int(6);
    const code =
      range === 0 ? r.int(0x20) : range === 1 ? 0x20 + r.int(0x5f) : range === 2 ? 0x80 + r.int(0x80) : range === 3 ? 0xd800 + r.int(0x800) : range === 4 ? 0x100 + r.int(0x2000) : 0x61 + r.int(26);
    s += String.fromCharCode(code);
  }
  return s;
}

const WRONG_TYPES: readonly unknown[] = [null, true, false, 0, -1, 1.5, 1e308, -1e308, '', 'x', [], [null], [1], {}, { a: 1 }, [[[]]]];
const BAD_NUMBERS: readonly unknown[] = [-1, 0, -0.5, 1.5, 1e308, -1e308, 2 ** 53 + 1, 5e-324, '10', '-1', 'NaN', 'Infinity', '1e308', null, true, [], {}, [1]];

function wrongType(r: Rng): unknown {
  return r.chance(0.2) ? hostileName(r) : r.pick(WRONG_TYPES);
}

function badNumber(r: Rng): unknown {
  return r.chance(0.1) ? wrongType(r) : r.pick(BAD_NUMBERS);
}

/** Model names that really reach a scripted upstream (or are simply fine), per mount. */
const GOOD_MODELS: Record<string, readonly string[]> = {
  openai: ['openai/gpt-4o-mini', 'openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku-latest', 'gemini/gemini-2.0-flash', 'gpt-4o-mini', 'fuzz-route'],
  litellm: ['gpt-4o-mini', 'claude-3-5-haiku-latest', 'gemini/gemini-2.0-flash', 'openai/gpt-4o-mini'],
  anthropic: ['claude-3-5-haiku-latest', 'claude-3-5-haiku-latest', 'openai/gpt-4o-mini', 'gemini/gemini-2.0-flash', 'anthropic/claude-3-5-haiku-latest'],
  embeddings: ['openai/text-embedding-3-small', 'gemini/text-embedding-004', 'anthropic/claude-3-5-haiku-latest'],
};

/** A model field: mostly plausible, often hostile, sometimes not a string at all. */
function modelValue(r: Rng, mount: keyof typeof GOOD_MODELS): unknown {
  const roll = r.next();
  if (roll < 0.45) return r.pick(GOOD_MODELS[mount]!);
  if (roll < 0.85) return hostileName(r);
  return wrongType(r);
}

function textContent(r: Rng): unknown {
  const roll = r.next();
  if (roll < 0.7) return 'hi';
  if (roll < 0.73) return LONG_WORD;
  if (roll < 0.75) return MANY_WORDS;
  if (roll < 0.8) return randomString(r, 20);
  return wrongType(r);
}

/** Content parts every chat format may meet, well formed or not, before its own part types. */
function commonParts(r: Rng): unknown[] {
  return [[null], [1], [[['x']]], [{ type: 'text', text: 'hi' }], [{ type: 'text', text: textContent(r) }], [{ type: 'text' }]];
}

function openAIContent(r: Rng): unknown {
  if (r.chance(0.55)) return textContent(r);
  return r.pick<unknown>([
    ...commonParts(r),
    [{ type: 'image_url', image_url: { url: 'data:image/png;base64,@@@' } }],
    [{ type: 'image_url', image_url: wrongType(r) }],
    [{ type: 'input_audio', input_audio: { data: 1, format: [] } }],
    [{ type: 'bogus' }],
    [{}],
    {},
    null,
    1,
  ]);
}

function openAIMessages(r: Rng): unknown {
  const roll = r.next();
  if (roll < 0.55) {
    const messages: unknown[] = [{ role: 'user', content: openAIContent(r) }];
    if (r.chance(0.2)) messages.unshift({ role: r.pick(['system', 'developer', 'bogus', '', 1]), content: openAIContent(r) });
    if (r.chance(0.15)) messages.push({ role: 'assistant', content: null, tool_calls: r.pick<unknown>([[{ id: 1, type: 'function', function: { name: [], arguments: {} } }], [null], 'x', [{}]]) });
    if (r.chance(0.1)) messages.push({ role: 'tool', tool_call_id: wrongType(r), content: openAIContent(r) });
    return messages;
  }
  if (roll < 0.65) return [{ role: 'user', content: 'hi', ...unknownFields(r) }];
  return r.pick<unknown>(['hi', {}, null, [], [null], [1], [[]], [{ role: 'user' }], [{ content: 'hi' }], [{ role: wrongType(r), content: 'hi' }], 5]);
}

function unknownFields(r: Rng): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const n = 1 + r.int(3);
  for (let i = 0; i < n; i++) out[r.pick(['__proto__x', 'constructor', 'x'.repeat(1 + r.int(20)), randomString(r, 5), 'extra_body', 'fuzz'])] = wrongType(r);
  return out;
}

function maybe(r: Rng, p: number, target: Record<string, unknown>, key: string, value: () => unknown): void {
  if (r.chance(p)) target[key] = value();
}

function openAIChatBody(r: Rng, mount: 'openai' | 'litellm'): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (!r.chance(0.05)) body.model = modelValue(r, mount);
  if (!r.chance(0.05)) body.messages = openAIMessages(r);
  maybe(r, 0.5, body, 'stream', () => r.pick<unknown>([true, false, true, 'true', 1, null]));
  maybe(r, 0.15, body, 'stream_options', () => r.pick<unknown>([{ include_usage: true }, { include_usage: 'x' }, 'x', null, []]));
  maybe(r, 0.2, body, 'max_tokens', () => badNumber(r));
  maybe(r, 0.1, body, 'max_completion_tokens', () => badNumber(r));
  maybe(r, 0.1, body, 'temperature', () => badNumber(r));
  maybe(r, 0.05, body, 'top_p', () => badNumber(r));
  maybe(r, 0.05, body, 'n', () => r.pick<unknown>([-1, 0, 2, 1e308, '2', 1.5]));
  maybe(r, 0.05, body, 'seed', () => badNumber(r));
  maybe(r, 0.05, body, 'stop', () => r.pick<unknown>([[null], 1, ['a', 1], {}, 'x'.repeat(1000)]));
  maybe(r, 0.08, body, 'tools', () => r.pick<unknown>([[null], 'x', [{ type: 'function' }], [{ type: 'function', function: { name: 1, parameters: 'x' } }], [{}], {}]));
  maybe(r, 0.05, body, 'tool_choice', () => r.pick<unknown>(['bogus', 1, { type: 'function' }, { type: 'function', function: { name: [] } }]));
  maybe(r, 0.05, body, 'response_format', () => r.pick<unknown>(['json', { type: 'bogus' }, { type: 'json_schema' }, { type: 'json_schema', json_schema: 1 }]));
  maybe(r, 0.05, body, 'logprobs', () => wrongType(r));
  maybe(r, 0.05, body, 'user', () => wrongType(r));
  maybe(r, 0.08, body, 'metadata', () => r.pick<unknown>([{ tier: 'batch' }, 'x', [], { a: { b: { c: [] } } }, null, { k: LONG }]));
  maybe(r, 0.1, body, 'fallbacks', () => r.pick<unknown>([[hostileName(r)], ['openai/gpt-4o-mini'], 'openai/gpt-4o-mini', [1], [null], {}, [], ['nope/x'], ['fuzz-route']]));
  if (r.chance(0.15)) Object.assign(body, unknownFields(r));
  return body;
}

function embeddingsBody(r: Rng): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (!r.chance(0.05)) body.model = modelValue(r, 'embeddings');
  if (!r.chance(0.05)) {
    body.input = r.pick<unknown>(['hi', 'hi', ['a', 'b'], [1, 2, 3], [[1, 2]], [], null, {}, [null], '', LONG_WORD, [textContent(r)], wrongType(r), new Array(3000).fill('x')]);
  }
  maybe(r, 0.15, body, 'encoding_format', () => r.pick<unknown>(['base64', 'float', 'bogus', 1, null]));
  maybe(r, 0.15, body, 'dimensions', () => badNumber(r));
  maybe(r, 0.05, body, 'user', () => wrongType(r));
  if (r.chance(0.1)) Object.assign(body, unknownFields(r));
  return body;
}

function anthropicContent(r: Rng): unknown {
  if (r.chance(0.55)) return textContent(r);
  return r.pick<unknown>([
    ...commonParts(r),
    [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: '@@@' } }],
    [{ type: 'image', source: wrongType(r) }],
    [{ type: 'document', source: { type: 'url', url: 1 } }],
    [{ type: 'tool_use', id: 1, name: [], input: 'x' }],
    [{ type: 'tool_result', tool_use_id: wrongType(r), content: [null] }],
    [{ type: 'thinking', thinking: 1, signature: [] }],
    [{ type: 'bogus' }],
    [{}],
    {},
    null,
  ]);
}

function anthropicBody(r: Rng, countTokens: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (!r.chance(0.05)) body.model = modelValue(r, 'anthropic');
  if (!countTokens && !r.chance(0.1)) body.max_tokens = r.chance(0.6) ? 16 : badNumber(r);
  if (!r.chance(0.05)) {
    body.messages = r.chance(0.7)
      ? [{ role: r.chance(0.9) ? 'user' : r.pick<unknown>(['assistant', 'system', 'bogus', 1]), content: anthropicContent(r) }]
      : r.pick<unknown>(['hi', {}, null, [], [null], [1], [{ role: 'user' }], [{ content: 'hi' }]]);
  }
  maybe(r, 0.5, body, 'stream', () => r.pick<unknown>([true, false, true, 'true', 1, null]));
  maybe(r, 0.1, body, 'system', () => r.pick<unknown>(['be brief', [null], [{ type: 'text', text: 1 }], 1, {}, LONG_WORD]));
  maybe(r, 0.1, body, 'temperature', () => badNumber(r));
  maybe(r, 0.05, body, 'top_k', () => badNumber(r));
  maybe(r, 0.05, body, 'stop_sequences', () => r.pick<unknown>([[null], 1, ['a', 1], 'x']));
  maybe(r, 0.08, body, 'tools', () => r.pick<unknown>([[null], 'x', [{ name: 1 }], [{ name: 'f', input_schema: 'x' }], [{}], {}]));
  maybe(r, 0.05, body, 'tool_choice', () => r.pick<unknown>(['any', { type: 'bogus' }, { type: 'tool' }, { type: 'tool', name: 1 }]));
  maybe(r, 0.08, body, 'thinking', () => r.pick<unknown>([{ type: 'enabled', budget_tokens: -1 }, { type: 'enabled' }, { type: 'enabled', budget_tokens: 1e308 }, 'x', { type: 'bogus' }]));
  maybe(r, 0.05, body, 'metadata', () => r.pick<unknown>([{ user_id: 1 }, 'x', [], { user_id: LONG }]));
  if (r.chance(0.1)) Object.assign(body, unknownFields(r));
  return body;
}

function geminiParts(r: Rng): unknown {
  if (r.chance(0.6)) return [{ text: textContent(r) }];
  return r.pick<unknown>([
    [null],
    [1],
    [{}],
    [{ text: 1 }],
    [{ inlineData: { mimeType: 1, data: '@@@' } }],
    [{ inline_data: { mime_type: 'image/png', data: [] } }],
    [{ functionCall: { name: 1, args: 'x' } }],
    [{ functionResponse: { name: 'f', response: [null] } }],
    [{ fileData: { fileUri: 1 } }],
    'hi',
    {},
    null,
  ]);
}

function geminiBody(r: Rng, method: string): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (method === 'embedContent') {
    if (!r.chance(0.05)) body.content = r.chance(0.7) ? { parts: geminiParts(r) } : wrongType(r);
    maybe(r, 0.1, body, 'taskType', () => r.pick<unknown>(['RETRIEVAL_QUERY', 'BOGUS', 1]));
    maybe(r, 0.1, body, 'outputDimensionality', () => badNumber(r));
    return body;
  }
  if (method === 'batchEmbedContents') {
    body.requests = r.pick<unknown>([[{ content: { parts: geminiParts(r) } }], [], null, [null], 'x']);
    return body;
  }
  if (!r.chance(0.05)) {
    body.contents = r.chance(0.7)
      ? [{ role: r.chance(0.85) ? 'user' : r.pick<unknown>(['model', 'system', 'bogus', 1]), parts: geminiParts(r) }]
      : r.pick<unknown>(['hi', {}, null, [], [null], [1], [{ role: 'user' }], [{ parts: 'x' }]]);
  }
  if (method === 'countTokens' && r.chance(0.2)) body.generateContentRequest = r.pick<unknown>([{ contents: [null] }, 'x', {}, null]);
  maybe(r, 0.2, body, 'generationConfig', () =>
    r.pick<unknown>([
      { maxOutputTokens: badNumber(r) },
      { temperature: 'x' },
      { candidateCount: 1e308 },
      { responseMimeType: 1 },
      { thinkingConfig: { thinkingBudget: -5 } },
      { stopSequences: [null] },
      'x',
      [],
    ]),
  );
  maybe(r, 0.1, body, 'systemInstruction', () => r.pick<unknown>([{ parts: geminiParts(r) }, 'be brief', 1, [null]]));
  maybe(r, 0.08, body, 'tools', () => r.pick<unknown>([[null], 'x', [{ functionDeclarations: [{ name: 1 }] }], [{ functionDeclarations: 'x' }], [{}]]));
  maybe(r, 0.05, body, 'safetySettings', () => r.pick<unknown>([[null], 'x', [{ category: 1, threshold: [] }]]));
  if (r.chance(0.1)) Object.assign(body, unknownFields(r));
  return body;
}

/**
 * A valid request with one field taken from a hostile one: requests that get past the first checks and reach
 * translation, budgets, routing and the scripted upstreams.
 */
function oneBadField(r: Rng, valid: Record<string, unknown>, hostile: Record<string, unknown>): Record<string, unknown> {
  const keys = Object.keys(hostile);
  if (keys.length === 0) return valid;
  const key = r.pick(keys);
  return { ...valid, [key]: hostile[key] };
}

const VALID_CHAT = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

function chatBody(r: Rng, mount: 'openai' | 'litellm'): Record<string, unknown> {
  const hostile = openAIChatBody(r, mount);
  if (!r.chance(0.35)) return hostile;
  const model = r.pick(GOOD_MODELS[mount]!);
  return oneBadField(r, { ...VALID_CHAT, model, ...(r.chance(0.5) ? { stream: true } : {}) }, hostile);
}

function messagesBody(r: Rng, countTokens: boolean): Record<string, unknown> {
  const hostile = anthropicBody(r, countTokens);
  if (!r.chance(0.35)) return hostile;
  const valid = { model: r.pick(GOOD_MODELS.anthropic!), messages: [{ role: 'user', content: 'hi' }], ...(countTokens ? {} : { max_tokens: 16 }), ...(r.chance(0.5) ? { stream: true } : {}) };
  return oneBadField(r, valid, hostile);
}

function genaiBody(r: Rng, method: string): Record<string, unknown> {
  const hostile = geminiBody(r, method);
  if (!r.chance(0.35)) return hostile;
  const valid = method === 'embedContent' ? { content: { parts: [{ text: 'hi' }] } } : { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
  return oneBadField(r, valid, hostile);
}

// ---------------------------------------------------------------------------------------------------------------
// Paths

/** How a hostile name can appear in a URL path segment: encoded, raw, or as broken percent-encoding. */
const BAD_ENCODINGS: readonly string[] = [
  '%',
  '%zz',
  '%E0%A4%A',
  '%ED%A0%80',
  '%00',
  '%0d%0aX-Injected:%201',
  '..%2F..%2Fv1%2Ffiles',
  '../../x',
  '%2e%2e/%2e%2e',
  'a%2Fb',
  '%FF%FE',
  '%C0%AF',
  'openai%2Fgpt-%E2%82%AC',
  'gemini%2F..%2F..%2Fv1%2Ffiles%3Fx%3D',
  'gemini%2Fx%23y',
  '%25',
];

function encodeSegment(r: Rng, name: string): string {
  if (r.chance(0.25)) return r.pick(BAD_ENCODINGS);
  if (r.chance(0.15)) return name; // raw: may need the socket path (bytes no HTTP client sends)
  try {
    return encodeURIComponent(name);
  } catch {
    return name.replace(/[\ud800-\udfff]/g, '%ED%A0%80');
  }
}

function pathSegment(r: Rng, good: readonly string[]): string {
  if (r.chance(0.45)) return encodeURIComponent(r.pick(good));
  return encodeSegment(r, hostileName(r));
}

const GENAI_MODELS = ['gemini-2.0-flash', 'gemini-2.0-flash', 'openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku-latest', 'text-embedding-004', 'gemini/gemini-2.0-flash'];
const GENAI_METHODS = ['generateContent', 'streamGenerateContent', 'countTokens', 'embedContent', 'batchEmbedContents', 'bogus', ''];

// ---------------------------------------------------------------------------------------------------------------
// Headers and bodies

const CONTENT_TYPES: readonly string[] = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/jsonx',
  'a/b/c',
  'application/merge-patch+json',
  'application/octet-stream',
  ';;;',
];

const INVALID_JSON: readonly string[] = ['{', '{"model":', 'nul', '\u0000', '{"a":1}}', "{'a':1}", '{"model":"openai/gpt-4o-mini",}', '[1,]', '{"a":NaN}', '{"a":1e400', '"unterminated', '\ufeff{}', '{"a":"\\ud800\\"}'];
const RAW_NUMBERS: readonly string[] = ['1e400', '-1e400', '-0', '1E999', '0.0000000000000000000000000001', '123456789012345678901234567890'];

/** Header values an HTTP client can send (printable ASCII). */
function headerSafe(value: string): string {
  return value.replace(/[^\x20-\x7e]/g, '?');
}

function credential(r: Rng): string {
  return r.pick([
    VIRTUAL_KEY,
    VIRTUAL_KEY,
    `tg-${randomString(r, 10)}`,
    'tg-',
    'sk-not-a-virtual-key',
    '',
    'x'.repeat(8000),
    randomString(r, 30),
    `${VIRTUAL_KEY}x`,
    ADMIN_KEY,
  ]);
}

function randomHeaders(r: Rng, family: Family): Record<string, string> {
  const headers: Record<string, string> = {};
  if (r.chance(0.3)) headers.authorization = r.pick(['Bearer ', 'Bearer ', 'Basic ', '', 'bearer  ', 'Token ']) + credential(r);
  if (r.chance(family === 'anthropic' ? 0.4 : 0.1)) headers['x-api-key'] = credential(r);
  if (family === 'anthropic' && r.chance(0.3)) headers['anthropic-version'] = r.pick(['2023-06-01', 'garbage', '', '9999-99-99']);
  if (family === 'anthropic' && r.chance(0.1)) headers['anthropic-beta'] = r.pick(['bogus', 'prompt-caching-2024-07-31,,,', '']);
  if (family === 'genai' && r.chance(0.3)) headers['x-goog-api-key'] = credential(r);
  if (r.chance(0.1)) headers['x-tollgate-provider-key'] = r.pick(['sk-client', '', randomString(r, 20), 'x'.repeat(5000)]);
  if (r.chance(0.05)) headers.accept = r.pick(['text/event-stream', 'application/xml', '*/*;q=x', '']);
  if (r.chance(0.05)) headers['x-forwarded-for'] = r.pick(['10.0.0.1', 'garbage', '::1, 8.8.8.8', '']);
  if (r.chance(0.03)) headers['x-request-id'] = randomString(r, 20);
  for (const key of Object.keys(headers)) headers[key] = headerSafe(headers[key]!);
  return headers;
}

/** Serialises a body object in one of many right and wrong ways; sets the content type. */
function encodeBody(r: Rng, body: unknown, headers: Record<string, string>): string | Buffer | undefined {
  const roll = r.next();
  let text = JSON.stringify(body);
  if (roll < 0.06) {
    // Deep nesting: inside a field, or as the whole body.
    const depth = r.pick([200, 2_000, 5_000, 100_000]);
    const nest = r.chance(0.5) ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    text = r.chance(0.7) && text.startsWith('{') && text.length > 2 ? `{"${r.pick(['metadata', 'messages', 'model', 'contents', 'input', 'tools', 'x'])}":${nest},${text.slice(1)}` : nest;
  } else if (roll < 0.11) {
    text = r.pick(INVALID_JSON);
  } else if (roll < 0.15) {
    text = '';
  } else if (roll < 0.19) {
    text = JSON.stringify(r.pick<unknown>([[], 'string', 1, null, true, [body]]));
  } else if (roll < 0.22 && text.startsWith('{') && text.length > 2) {
    text = `{"${r.pick(['max_tokens', 'temperature', 'n', 'dimensions', 'x'])}":${r.pick(RAW_NUMBERS)},${text.slice(1)}`;
  } else if (roll < 0.24) {
    // Invalid UTF-8 bytes inside a string.
    const buffer = Buffer.from(text.replace(/"model":"/, '"model":"\u0001'));
    const at = buffer.indexOf(0x01);
    if (at >= 0) buffer[at] = 0xff;
    headers['content-type'] = 'application/json';
    return buffer;
  }
  const ct = r.next();
  if (ct < 0.82) headers['content-type'] = 'application/json';
  else if (ct < 0.88) headers['content-type'] = r.pick(['application/json; charset=utf-8', 'Application/JSON', 'application/json;charset=UTF-8']);
  else if (ct < 0.96) headers['content-type'] = r.pick(CONTENT_TYPES);
  // else: no content type at all
  return text;
}

// ---------------------------------------------------------------------------------------------------------------
// Admin API

const ADMIN_NAMES = ['fuzz-x', 'openai', 'a%2Fb', '%', '%zz', '%00', '..', '..%2F..', 'x'.repeat(300), '%E2%82%AC', 'anthropic', 'unknown-id', '%0d%0aX-Injected:%201'];

function adminPath(r: Rng): string {
  const name = r.pick(ADMIN_NAMES);
  const other = r.pick(ADMIN_NAMES);
  return r.pick([
    '/api/config',
    '/api/config?layer=api',
    `/api/config?layer=${name}`,
    '/api/config/schema',
    '/api/providers',
    `/api/providers/${name}`,
    `/api/providers/${name}/keys`,
    `/api/providers/${name}/keys/${other}`,
    '/api/routes',
    `/api/routes/${name}`,
    `/api/routes/${name}/health`,
    `/api/routes/openai%2Fgpt-4o-mini/health`,
    '/api/keys',
    `/api/keys/${name}`,
    `/api/keys/${name}/rotate`,
    '/api/teams',
    `/api/teams/${name}`,
    `/api/logs?limit=${r.pick(['-1', '1e308', 'x', '0', '%00'])}&key_id=${name}`,
    `/api/audit?limit=${r.pick(['-1', '1e308', 'x', '5'])}&before=${r.pick(['x', '-1', '2024-13-45', '%00'])}`,
    `/api/models?provider=${name}&search=${name}&limit=${r.pick(['-1', '1e308', 'x'])}&offset=${r.pick(['-1', 'NaN', '1e308'])}`,
    '/api/alerts',
    `/api/alerts/channels/${name}`,
    `/api/alerts/channels/${name}/test`,
    `/api/alerts/rules/${name}`,
    `/api/alerts/deliveries?limit=${r.pick(['-1', '1e308', 'x', '5'])}&channel=${name}`,
    '/api/alerts/open',
    '/api/alerts/schema',
    '/api/mcp',
    `/api/mcp/tools?server=${name}`,
    `/api/mcp/calls?limit=${r.pick(['-1', '1e308', 'x', '5'])}&key_id=${name}`,
    `/api/${name}`,
    '/api',
    '/api/',
  ]);
}

/**
 * A body an admin write must refuse: never a valid change, so the fuzz run cannot reconfigure the gateway it is
 * testing (a valid `PUT /api/routes/*` would capture every model).
 */
function invalidAdminBody(r: Rng, headers: Record<string, string>): string {
  headers['content-type'] = r.pick(['application/json', 'application/json', 'application/merge-patch+json', 'text/plain']);
  return r.pick([
    () => r.pick(INVALID_JSON),
    () => JSON.stringify(r.pick<unknown>([[], 'string', 1, null, true])),
    () => '{"x":' + '['.repeat(5_000) + ']'.repeat(5_000) + '}',
    () => JSON.stringify({ __fuzz_unknown_field__: wrongType(r), ...unknownFields(r) }),
    () => JSON.stringify({ __fuzz_unknown_field__: 1, settings: { port: wrongType(r), routing: { retry: { max_attempts: -1 } } } }),
    () => JSON.stringify({ __fuzz_unknown_field__: 1, providers: { [hostileName(r)]: { base_url: wrongType(r), api_key: 'env:TOLLGATE_ADMIN_KEY' } } }),
    () => JSON.stringify({ __fuzz_unknown_field__: 1, targets: [{ model: hostileName(r), weight: 1e308 }, { model: 'openai/x', weight: 1e308 }] }),
    () => JSON.stringify({ __fuzz_unknown_field__: 1, name: hostileName(r), budget: badNumber(r), models: wrongType(r) }),
  ])();
}

function adminRequest(r: Rng, index: number): FuzzRequest {
  const headers: Record<string, string> = {};
  const keyRoll = r.next();
  const withKey = keyRoll < 0.45;
  if (withKey) headers.authorization = `Bearer ${ADMIN_KEY}`;
  else if (keyRoll < 0.75) headers.authorization = headerSafe(r.pick(['Bearer wrong', 'Bearer ', `Basic ${ADMIN_KEY}`, `Bearer ${ADMIN_KEY}x`, `Bearer ${VIRTUAL_KEY}`, randomString(r, 20)]));
  const method = r.pick(['GET', 'GET', 'GET', 'PUT', 'PATCH', 'POST', 'DELETE']);
  const path = adminPath(r);
  let body: string | undefined;
  if (method !== 'GET' && method !== 'DELETE') {
    body = withKey ? invalidAdminBody(r, headers) : encodeBody(r, wrongType(r), headers)?.toString();
  }
  // DELETE with the admin key only on names that are not the fuzz run's own (file-defined items answer 409 anyway).
  return { index, kind: `admin ${method}${withKey ? ' (admin key)' : ''}`, family: 'openai', method, path, headers, ...(body !== undefined ? { body } : {}) };
}

// ---------------------------------------------------------------------------------------------------------------
// Raw requests: framing and bytes that no well-behaved client produces

function rawRequest(r: Rng, index: number): FuzzRequest {
  const json = '{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}';
  const path = r.pick([
    '/v1/chat/completions',
    '/chat/completions',
    '/litellm/v1/chat/completions',
    '/v1/embeddings',
    '/anthropic/v1/messages',
    '/anthropic/v1/messages/count_tokens',
    '/genai/v1beta/models/gemini-2.0-flash:generateContent',
    '/api/keys',
  ]);
  const head = (lines: string[]): string => `${lines.join('\r\n')}\r\n\r\n`;
  const variants: Array<[string, () => Buffer]> = [
    ['content-length shorter than the body', () => Buffer.from(head([`POST ${path} HTTP/1.1`, 'host: x', 'content-type: application/json', 'content-length: 5', 'connection: close']) + json)],
    ['negative content-length', () => Buffer.from(head([`POST ${path} HTTP/1.1`, 'host: x', 'content-type: application/json', 'content-length: -1', 'connection: close']) + json)],
    [
      'content-length with chunked',
      () => Buffer.from(head([`POST ${path} HTTP/1.1`, 'host: x', 'content-type: application/json', `content-length: ${json.length}`, 'transfer-encoding: chunked', 'connection: close']) + json),
    ],
    ['bad chunk size', () => Buffer.from(head([`POST ${path} HTTP/1.1`, 'host: x', 'content-type: application/json', 'transfer-encoding: chunked', 'connection: close']) + 'zz\r\n{}\r\n0\r\n\r\n')],
    ['two content-lengths', () => Buffer.from(head([`POST ${path} HTTP/1.1`, 'host: x', 'content-type: application/json', `content-length: ${json.length}`, 'content-length: 3', 'connection: close']) + json)],
    ['a header line without a colon', () => Buffer.from(head([`POST ${path} HTTP/1.1`, 'host: x', 'this is not a header', `content-length: ${json.length}`, 'connection: close']) + json)],
    [
      'raw UTF-8 in the path',
      () => Buffer.from(head([`POST ${r.pick(['/genai/v1beta/models/gpt-€:generateContent', '/genai/v1beta/models/openai/gpt-€:generateContent', '/v1/chat/completions€', '/anthropic/v1/messages€'])} HTTP/1.1`, 'host: x', 'content-type: application/json', `content-length: ${json.length}`, 'connection: close']) + json),
    ],
    [
      'invalid UTF-8 bytes in the path',
      () => Buffer.concat([Buffer.from('POST /genai/v1beta/models/'), Buffer.from([0xff, 0xfe, 0xed, 0xa0, 0x80]), Buffer.from(`:generateContent HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`)]),
    ],
    [
      'a Latin-1 byte in an x-api-key',
      () =>
        Buffer.concat([
          Buffer.from(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-api-key: tg-`),
          Buffer.from([0xe9, 0xff]),
          Buffer.from(`\r\nauthorization: Bearer tg-`),
          Buffer.from([0xe9]),
          Buffer.from(`\r\ncontent-length: ${json.length}\r\nconnection: close\r\n\r\n${json}`),
        ]),
    ],
    [
      'a Latin-1 byte in the provider key header',
      () =>
        Buffer.concat([
          Buffer.from(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-tollgate-provider-key: sk-`),
          Buffer.from([0xe9, 0xff]),
          Buffer.from(`\r\ncontent-length: ${json.length}\r\nconnection: close\r\n\r\n${json}`),
        ]),
    ],
    ['HTTP/1.0 without host', () => Buffer.from(head([`POST ${path} HTTP/1.0`, 'content-type: application/json', `content-length: ${json.length}`]) + json)],
    ['a header of 20 KB', () => Buffer.from(head([`POST ${path} HTTP/1.1`, 'host: x', `x-big: ${'a'.repeat(20_000)}`, `content-length: ${json.length}`, 'connection: close']) + json)],
    ['a space in the path', () => Buffer.from(head([`POST ${path}/a b HTTP/1.1`, 'host: x', 'content-length: 2', 'connection: close']) + '{}')],
    ['a body on GET', () => Buffer.from(head([`GET ${path} HTTP/1.1`, 'host: x', 'content-type: application/json', `content-length: ${json.length}`, 'connection: close']) + json)],
  ];
  const [what, build] = r.pick(variants);
  const raw = build();
  // Some variants write their own request target: its mount decides the error shape.
  const target = /^[A-Z]+ (\S*)/.exec(raw.subarray(0, 300).toString('latin1'))?.[1] ?? path;
  return { index, kind: `raw: ${what}`, family: familyOf(target), method: 'RAW', path: target, headers: {}, raw };
}

// ---------------------------------------------------------------------------------------------------------------

/** The mount a request target belongs to (`/anthropic%2F` is not under `/anthropic`). */
export function familyOf(path: string): Family {
  if (/^\/anthropic(?:[/?#]|$)/.test(path)) return 'anthropic';
  if (/^\/genai(?:[/?#]|$)/.test(path)) return 'genai';
  return 'openai';
}

function odd(r: Rng, method: string): string {
  return r.chance(0.05) ? r.pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'POST', 'HEAD']) : method;
}

/** Request `index` of the run seeded with `seed`. */
export function generateRequest(seed: number, index: number): FuzzRequest {
  const r = rngFor(seed, index);
  const roll = r.next();
  if (roll < 0.05) return rawRequest(r, index);
  if (roll < 0.13) return adminRequest(r, index);

  let kind: string;
  let path: string;
  let method = 'POST';
  let body: unknown;
  if (roll < 0.38) {
    kind = 'chat';
    const mount = r.pick<['openai' | 'litellm', string]>([
      ['openai', '/v1/chat/completions'],
      ['openai', '/chat/completions'],
      ['litellm', '/litellm/v1/chat/completions'],
      ['litellm', '/litellm/chat/completions'],
    ]);
    path = mount[1];
    body = chatBody(r, mount[0]);
  } else if (roll < 0.46) {
    kind = 'embeddings';
    path = r.pick(['/v1/embeddings', '/embeddings', '/litellm/embeddings', '/litellm/v1/embeddings']);
    body = embeddingsBody(r);
  } else if (roll < 0.5) {
    kind = 'models';
    method = 'GET';
    const name = encodeSegment(r, hostileName(r));
    path = r.pick([
      '/v1/models',
      `/v1/models?provider=${name}&search=${name}`,
      `/v1/models/${pathSegment(r, ['openai/gpt-4o-mini', 'gpt-4o-mini'])}`,
      '/models',
      `/models?search=${name}`,
      '/litellm/models',
      '/litellm/v1/models',
      `/v1/${name}`,
      '/v1/messages',
      '/v1/responses',
      '/v1/completions',
      `/${name}`,
    ]);
    if (path === '/v1/messages' || path === '/v1/responses' || path === '/v1/completions') {
      method = 'POST';
      body = openAIChatBody(r, 'openai');
    }
  } else if (roll < 0.7) {
    const count = r.chance(0.25);
    kind = count ? 'anthropic count_tokens' : 'anthropic messages';
    path = count ? '/anthropic/v1/messages/count_tokens' : '/anthropic/v1/messages';
    if (r.chance(0.05)) path = r.pick(['/anthropic/v1/models', `/anthropic/v1/models/${pathSegment(r, ['claude-3-5-haiku-latest'])}`, `/anthropic/v1/${encodeSegment(r, hostileName(r))}`, '/anthropic/v1/messages/batches']);
    body = messagesBody(r, count);
    if (path.includes('/models')) method = 'GET';
  } else if (roll < 0.93) {
    const genMethod = r.pick(GENAI_METHODS);
    kind = `genai ${genMethod || '(no method)'}`;
    const version = r.chance(0.9) ? 'v1beta' : r.pick(['v1', 'v1alpha', 'x', '%00', '..']);
    const segment = pathSegment(r, GENAI_MODELS);
    path = `/genai/${version}/models/${segment}${genMethod ? `:${genMethod}` : ''}`;
    if (genMethod === 'streamGenerateContent' && r.chance(0.7)) path += '?alt=sse';
    if (r.chance(0.1)) path += `${path.includes('?') ? '&' : '?'}${r.pick(['key=garbage', 'alt=bogus', 'key=', `key=${VIRTUAL_KEY}`, '%zz=1'])}`;
    if (r.chance(0.04)) {
      method = 'GET';
      path = r.pick(['/genai/v1beta/models', `/genai/v1beta/models/${segment}`, `/genai/v1beta/models?pageSize=${r.pick(['-1', 'x', '1e308'])}&pageToken=%00`]);
    }
    body = genaiBody(r, genMethod);
  } else {
    kind = 'odd path';
    method = r.pick(['GET', 'POST', 'PUT', 'DELETE']);
    path = r.pick([
      '/',
      `/${encodeSegment(r, hostileName(r))}`,
      '/v2/chat/completions',
      '/litellm/v1/messages',
      '/litellm/health',
      '/health',
      '/v1/chat/completions/x',
      '/v1//chat/completions',
      '/./v1/chat/completions',
      '/v1/chat/completions?x=%zz',
      '/v1/chat/completions#frag',
      '/anthropic',
      '/anthropic/v1/messages/count_tokens/x',
      '/genai',
      '/genai/v1beta',
      '/genai/v1beta/models/:generateContent',
      '/genai/v1beta/models/a:b:c',
      '/genai/v1beta/models/gemini-2.0-flash:generateContent:x',
    ]);
    body = openAIChatBody(r, 'openai');
  }
  method = odd(r, method);
  const headers = randomHeaders(r, familyOf(path));
  const encoded = method === 'GET' || method === 'HEAD' ? (r.chance(0.05) ? JSON.stringify(body ?? {}) : undefined) : encodeBody(r, body ?? {}, headers);
  if (encoded !== undefined && (method === 'GET' || method === 'HEAD')) headers['content-type'] = 'application/json';
  // Paths an HTTP client refuses to send (raw bytes outside 0x21-0xFF) go through the socket instead. A HEAD keeps its
  // method: its answer rightly has no body, whatever the status.
  if (/[^\u0021-\u00ff]/.test(path)) {
    const payload = encoded === undefined ? Buffer.alloc(0) : Buffer.from(encoded);
    const lines = [`${method} ${path} HTTP/1.1`, 'host: x', 'connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), `content-length: ${payload.length}`];
    return { index, kind: `${kind} (raw path)`, family: familyOf(path), method: method === 'HEAD' ? 'HEAD' : 'RAW', path, headers: {}, raw: Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), payload]) };
  }
  return { index, kind, family: familyOf(path), method, path, headers, ...(encoded !== undefined ? { body: encoded } : {}) };
}
