import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile, parseConfigText } from '../../src/config/load-file.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { type ProviderRuntime, type RuntimeConfig } from '../../src/core/config.js';
import { configFileSchema } from '../../src/config/schema.js';
import { ConfigError, resolveSecret, type Env } from '../../src/config/secret-ref.js';

function runtime(file: unknown = {}, env: Env = {}): RuntimeConfig {
  return resolveRuntimeConfig({ api: {}, file: configFileSchema.parse(file) }, env, 7);
}

function provider(config: RuntimeConfig, name: string): ProviderRuntime {
  const found = config.providers.get(name);
  if (!found) throw new Error(`no provider ${name}`);
  return found;
}

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'tollgate-config-unit-'));
});
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

describe('resolveRuntimeConfig: settings', () => {
  it('has working defaults with nothing configured', () => {
    const config = runtime();
    expect(config.version).toBe(7);
    expect(config.settings.port).toBe(8080);
    expect(config.settings.host).toBe('0.0.0.0');
    expect(config.settings.dataDir).toBe('./data');
    expect(config.settings.upstreamTimeouts).toEqual({ firstByteMs: 30_000, totalMs: 600_000, idleMs: 300_000 });
  });

  it('takes settings from the file', () => {
    const config = runtime({ settings: { port: 9000, host: '127.0.0.1', data_dir: '/var/lib/tollgate', upstream_timeouts: { first_byte_ms: 1000, total_ms: 2000, idle_ms: 1500 } } });
    expect(config.settings.port).toBe(9000);
    expect(config.settings.host).toBe('127.0.0.1');
    expect(config.settings.dataDir).toBe('/var/lib/tollgate');
    expect(config.settings.upstreamTimeouts).toEqual({ firstByteMs: 1000, totalMs: 2000, idleMs: 1500 });
    expect(provider(config, 'openai').timeouts).toEqual({ firstByteMs: 1000, totalMs: 2000, idleMs: 1500 });
  });

  it('lets PORT, HOST and TOLLGATE_DATA_DIR override the file', () => {
    const config = runtime(
      { settings: { port: 9000, host: '127.0.0.1', data_dir: '/from/file' } },
      { PORT: '9100', HOST: '::1', TOLLGATE_DATA_DIR: '/from/env' },
    );
    expect(config.settings.port).toBe(9100);
    expect(config.settings.host).toBe('::1');
    expect(config.settings.dataDir).toBe('/from/env');
  });

  it('treats empty environment variables as unset', () => {
    const config = runtime({ settings: { port: 9000, host: '127.0.0.1' } }, { PORT: '', HOST: '' });
    expect(config.settings.port).toBe(9000);
    expect(config.settings.host).toBe('127.0.0.1');
  });

  it('rejects a PORT that is not a non-negative integer', () => {
    for (const bad of ['abc', '-1', '80.5']) {
      expect(configError(() => runtime({}, { PORT: bad })).message).toContain('PORT');
    }
  });

  it('refuses environment settings outside the bounds the config schema sets for the same setting', () => {
    const cases: Array<[string, string, string]> = [
      ['TOLLGATE_MAX_BODY_BYTES', '0', 'settings.max_body_bytes'],
      ['TOLLGATE_MAX_RESPONSE_BYTES', '100', 'settings.max_response_bytes'],
      ['TOLLGATE_FIRST_BYTE_TIMEOUT_MS', '0', 'settings.upstream_timeouts.first_byte_ms'],
      ['TOLLGATE_TIMEOUT_MS', '0', 'settings.upstream_timeouts.total_ms'],
      ['TOLLGATE_IDLE_TIMEOUT_MS', '0', 'settings.upstream_timeouts.idle_ms'],
    ];
    for (const [name, value, field] of cases) {
      // The file refuses the value ...
      const [section, ...rest] = field.replace('settings.', '').split('.');
      const inFile = rest.length === 0 ? { [section!]: Number(value) } : { [section!]: { [rest[0]!]: Number(value) } };
      expect(configFileSchema.safeParse({ settings: inFile }).success, field).toBe(false);
      // ... and so does the environment, naming the variable.
      expect(configError(() => runtime({}, { [name]: value })).message).toContain(name);
    }
    expect(runtime({}, { TOLLGATE_MAX_BODY_BYTES: '1', TOLLGATE_MAX_RESPONSE_BYTES: '1024', TOLLGATE_TIMEOUT_MS: '1' }).settings).toMatchObject({
      maxBodyBytes: 1,
      maxResponseBytes: 1024,
      upstreamTimeouts: { totalMs: 1 },
    });
  });

  it('checks LOG_LEVEL like settings.log_level, case aside', () => {
    expect(runtime({}, { LOG_LEVEL: 'DEBUG' }).settings.logLevel).toBe('debug');
    expect(runtime({}, { LOG_LEVEL: ' warn ' }).settings.logLevel).toBe('warn');
    expect(configError(() => runtime({}, { LOG_LEVEL: 'bogus' })).message).toBe('LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent, got "bogus"');
  });

  it('lets a provider override the default timeouts', () => {
    const config = runtime({ providers: { groq: { timeouts: { total_ms: 1234 } } } });
    expect(provider(config, 'groq').timeouts).toEqual({ firstByteMs: 30_000, totalMs: 1234, idleMs: 300_000 });
  });
});

describe('resolveRuntimeConfig: providers and keys', () => {
  it('lists every built-in vendor, unconfigured and keyless', () => {
    const config = runtime();
    const openai = provider(config, 'openai');
    expect(openai.keys).toEqual([]);
    expect(openai.source).toBe('builtin');
    expect(openai.baseUrl).toBe('https://api.openai.com/v1');
    expect(config.providers.has('ollama')).toBe(true);
    expect(config.providers.has('perplexity')).toBe(true);
  });

  it('reads OPENAI_API_KEY and OPENAI_BASE_URL from the environment', () => {
    const openai = provider(runtime({}, { OPENAI_API_KEY: 'sk-env', OPENAI_BASE_URL: 'http://proxy.local:8080/v1/' }), 'openai');
    expect(openai.keys).toEqual([{ id: 'env', value: 'sk-env', raw: 'env:OPENAI_API_KEY', weight: 1, models: null, disabled: false, source: 'env' }]);
    expect(openai.baseUrl).toBe('http://proxy.local:8080/v1');
    expect(openai.source).toBe('env');
  });

  it('lets the file key override the environment key for the vendor’s own provider', () => {
    const file = { providers: { openai: { api_key: 'sk-file', base_url: 'http://file.local/v1' } } };
    const openai = provider(runtime(file, { OPENAI_API_KEY: 'sk-env' }), 'openai');
    expect(openai.keys.map((k) => [k.value, k.source])).toEqual([['sk-file', 'file']]);
    expect(provider(runtime({ providers: { openai: { base_url: 'http://file.local/v1' } } }, { OPENAI_API_KEY: 'sk-env' }), 'openai').keys.map((k) => k.value)).toEqual(['sk-env']);
    expect(openai.baseUrl).toBe('http://file.local/v1');
    expect(openai.source).toBe('file');
    expect(provider(runtime(file, {}), 'openai').keys.map((k) => [k.value, k.source])).toEqual([['sk-file', 'file']]);
  });

  it('lets the file base URL override the environment base URL', () => {
    const file = { providers: { openai: { base_url: 'http://file.local/v1' } } };
    expect(provider(runtime(file, { OPENAI_BASE_URL: 'http://env.local/v1' }), 'openai').baseUrl).toBe('http://file.local/v1');
    expect(provider(runtime({}, { OPENAI_BASE_URL: 'http://env.local/v1' }), 'openai').baseUrl).toBe('http://env.local/v1');
  });

  it('reads vendor alias env names, preferring the vendor’s own name', () => {
    expect(provider(runtime({}, { PPLX_API_KEY: 'pplx-alias' }), 'perplexity').keys[0]?.value).toBe('pplx-alias');
    expect(provider(runtime({}, { PPLX_API_KEY: 'pplx-alias', PERPLEXITY_API_KEY: 'pplx-own' }), 'perplexity').keys[0]?.value).toBe('pplx-own');
    expect(provider(runtime({}, { TOGETHERAI_API_KEY: 't' }), 'together').keys[0]?.value).toBe('t');
    expect(provider(runtime({}, { HF_TOKEN: 'hf' }), 'huggingface').keys[0]?.value).toBe('hf');
    expect(provider(runtime({}, { OLLAMA_API_BASE: 'http://gpu:11434/v1' }), 'ollama').baseUrl).toBe('http://gpu:11434/v1');
  });

  it('resolves env:NAME references in keys', () => {
    const config = runtime({ providers: { groq: { api_key: 'env:MY_GROQ_SECRET' } } }, { MY_GROQ_SECRET: 'gsk-123' });
    expect(provider(config, 'groq').keys).toMatchObject([{ value: 'gsk-123', raw: 'env:MY_GROQ_SECRET', weight: 1, models: null, source: 'file' }]);
  });

  it('resolves file:/path references, trimming the trailing newline', () => {
    const path = join(tmp, 'groq.key');
    writeFileSync(path, 'gsk-from-file\n');
    const config = runtime({ providers: { groq: { keys: [{ value: `file:${path}`, weight: 2, models: ['llama-3.1-8b-instant'] }] } } });
    expect(provider(config, 'groq').keys).toMatchObject([{ value: 'gsk-from-file', weight: 2, models: ['llama-3.1-8b-instant'], source: 'file' }]);
  });

  it('fails with a ConfigError naming the field when an env reference is missing', () => {
    const err = configError(() => runtime({ providers: { groq: { api_key: 'env:NOT_SET_ANYWHERE' } } }, {}));
    expect(err.message).toContain('providers.groq.api_key');
    expect(err.message).toContain('NOT_SET_ANYWHERE');
    const second = configError(() => runtime({ providers: { groq: { keys: [{ value: 'ok' }, { value: 'env:EMPTY' }] } } }, { EMPTY: '' }));
    expect(second.message).toContain('providers.groq.keys.1.value');
  });

  it('fails with a ConfigError when a file reference cannot be read', () => {
    const err = configError(() => runtime({ providers: { groq: { api_key: `file:${join(tmp, 'missing.key')}` } } }));
    expect(err.message).toContain('providers.groq.api_key');
    expect(err.message).toContain('ENOENT');
  });

  it('resolveSecret returns a literal value unchanged', () => {
    expect(resolveSecret('sk-literal', {}, 'x')).toBe('sk-literal');
    expect(resolveSecret('env:A', { A: 'a' }, 'x')).toBe('a');
  });

  it('adds a custom provider of a known type and rejects an unknown type', () => {
    const config = runtime({ providers: { 'lab-a': { type: 'openai', base_url: 'http://10.0.0.5:8000/v1', api_key: 'k' } } });
    const lab = provider(config, 'lab-a');
    expect(lab.vendor.id).toBe('openai');
    expect(lab.source).toBe('file');
    const err = configError(() => runtime({ providers: { 'lab-b': { type: 'nope' } } }));
    expect(err.message).toContain('providers.lab-b.type');
  });

  it('requires a type for a custom provider whose name is not a vendor', () => {
    expect(configError(() => runtime({ providers: { 'lab-c': { base_url: 'http://x/v1' } } })).message).toContain('lab-c');
  });
});

describe('resolveRuntimeConfig: base URLs by vendor convention', () => {
  it('reads ANTHROPIC_BASE_URL as the Anthropic SDK does (the host) and as tollgate did (with /v1)', () => {
    expect(provider(runtime({}, { ANTHROPIC_BASE_URL: 'https://api.anthropic.com' }), 'anthropic').baseUrl).toBe('https://api.anthropic.com/v1');
    expect(provider(runtime({}, { ANTHROPIC_BASE_URL: 'https://api.anthropic.com/v1/' }), 'anthropic').baseUrl).toBe('https://api.anthropic.com/v1');
    expect(provider(runtime(), 'anthropic').baseUrl).toBe('https://api.anthropic.com/v1');
  });

  it('reads the SDKs\' own variable names: GOOGLE_GEMINI_BASE_URL, GOOGLE_VERTEX_BASE_URL, CO_API_URL', () => {
    expect(provider(runtime({}, { GOOGLE_GEMINI_BASE_URL: 'https://gemini.proxy.local/' }), 'gemini').baseUrl).toBe('https://gemini.proxy.local/v1beta');
    expect(provider(runtime({}, { GOOGLE_VERTEX_BASE_URL: 'https://vertex.proxy.local' }), 'vertex').baseUrl).toBe('https://vertex.proxy.local/v1');
    expect(provider(runtime({}, { CO_API_URL: 'https://cohere.proxy.local' }), 'cohere').baseUrl).toBe('https://cohere.proxy.local/v2');
    expect(provider(runtime({}, { GROQ_BASE_URL: 'https://api.groq.com' }), 'groq').baseUrl).toBe('https://api.groq.com/openai/v1');
  });

  it('completes file base URLs the same way, and leaves an OpenAI-compatible path as written', () => {
    const config = runtime({
      providers: {
        anthropic: { base_url: 'http://10.0.0.9:9000/' },
        'lab-a': { type: 'openai', base_url: 'http://10.0.0.5:8000' },
        'lab-b': { type: 'openai', base_url: 'http://10.0.0.6/proxy/v1/' },
        'lab-c': { type: 'openai', base_url: 'https://gateway.example/v1/acct/gw/openai' },
      },
    });
    expect(provider(config, 'anthropic').baseUrl).toBe('http://10.0.0.9:9000/v1');
    expect(provider(config, 'lab-a').baseUrl).toBe('http://10.0.0.5:8000/v1');
    expect(provider(config, 'lab-b').baseUrl).toBe('http://10.0.0.6/proxy/v1');
    expect(provider(config, 'lab-c').baseUrl).toBe('https://gateway.example/v1/acct/gw/openai');
  });

  it('refuses an environment base URL that is not an http(s) URL, naming the variable', () => {
    const bare = configError(() => runtime({}, { ANTHROPIC_BASE_URL: 'api.anthropic.com' }));
    expect(bare.message).toMatch(/^ANTHROPIC_BASE_URL: expected an http:\/\/ or https:\/\/ URL/);
    expect(bare.message).toContain('"api.anthropic.com"');
    expect(configError(() => runtime({}, { OLLAMA_API_BASE: 'gpu:11434' })).message).toMatch(/^OLLAMA_API_BASE: /);
    expect(configError(() => runtime({}, { OPENAI_BASE_URL: 'ftp://files.local/v1' })).message).toMatch(/^OPENAI_BASE_URL: /);
  });

  it('does not quote credentials of a refused environment base URL', () => {
    const err = configError(() => runtime({}, { OPENAI_BASE_URL: 'user:s3cret@proxy.local/v1' }));
    expect(err.message).not.toContain('s3cret');
    expect(err.message).toContain('****@proxy.local/v1');
  });

  it('refuses a scheme-less base URL in the file with the field\'s path', () => {
    const err = configError(() => parseConfigText('providers:\n  anthropic:\n    base_url: api.anthropic.com\n', 'cfg.yaml'));
    expect(err.message).toContain('providers.anthropic.base_url');
  });
});

describe('parseConfigText', () => {
  it('reads YAML', () => {
    const yaml = [
      'settings:',
      '  port: 9001',
      'providers:',
      '  openai:',
      '    api_key: env:OPENAI_KEY',
      '    keys:',
      '      - value: sk-2',
      '        models: [gpt-4o]',
      '',
    ].join('\n');
    const config = parseConfigText(yaml, 'test.yaml');
    expect(config).toEqual({
      settings: { port: 9001 },
      providers: { openai: { api_key: 'env:OPENAI_KEY', keys: [{ value: 'sk-2', weight: 1, models: ['gpt-4o'] }] } },
    });
  });

  it('reads JSON', () => {
    const config = parseConfigText('{"settings":{"host":"127.0.0.1"},"providers":{"groq":{"api_key":"g"}}}', 'test.json');
    expect(config).toEqual({ settings: { host: '127.0.0.1' }, providers: { groq: { api_key: 'g' } } });
  });

  it('reads an empty text as an empty config', () => {
    expect(parseConfigText('', 'empty.yaml')).toEqual({});
    expect(parseConfigText('# only a comment\n', 'empty.yaml')).toEqual({});
  });

  it('names the field path of an invalid value', () => {
    const err = configError(() => parseConfigText('providers:\n  openai:\n    base_url: not a url\n', 'cfg.yaml'));
    expect(err.message).toContain('cfg.yaml');
    expect(err.message).toContain('providers.openai.base_url');
  });

  it('names nested paths for type errors', () => {
    const err = configError(() => parseConfigText('{"settings":{"port":"eighty"}}', 'cfg.json'));
    expect(err.message).toContain('settings.port');
    const keyErr = configError(() => parseConfigText('{"providers":{"groq":{"keys":[{"value":"a","weight":-1}]}}}', 'cfg.json'));
    expect(keyErr.message).toContain('providers.groq.keys.0.weight');
  });

  it('rejects a port out of range', () => {
    expect(configError(() => parseConfigText('settings:\n  port: 70000\n', 'cfg.yaml')).message).toContain('settings.port');
  });

  it('rejects unknown keys, at the root and nested', () => {
    const root = configError(() => parseConfigText('providerz: {}\n', 'cfg.yaml'));
    expect(root.message).toContain('providerz');
    const nested = configError(() => parseConfigText('providers:\n  openai:\n    api_kee: sk\n', 'cfg.yaml'));
    expect(nested.message).toContain('providers.openai');
    expect(nested.message).toContain('api_kee');
  });

  it('rejects a provider name that is not lower-case', () => {
    expect(configError(() => parseConfigText('providers:\n  Lab_A:\n    type: openai\n', 'cfg.yaml')).message).toContain('providers');
  });

  it('rejects text that is not YAML or JSON', () => {
    const err = configError(() => parseConfigText('settings: [unclosed\n', 'broken.yaml'));
    expect(err.message).toContain('broken.yaml');
  });
});

describe('loadConfigFile', () => {
  it('returns an empty config when there is no file', () => {
    const cwd = mkdtempSync(join(tmp, 'nofile-'));
    expect(loadConfigFile({}, cwd)).toEqual({ path: null, watchPath: join(cwd, 'tollgate.config.yaml'), config: {} });
  });

  it('fails with a ConfigError when TOLLGATE_CONFIG names a missing file', () => {
    const cwd = mkdtempSync(join(tmp, 'missing-'));
    const err = configError(() => loadConfigFile({ TOLLGATE_CONFIG: 'nowhere.yaml' }, cwd));
    expect(err.message).toContain('TOLLGATE_CONFIG');
    expect(err.message).toContain(join(cwd, 'nowhere.yaml'));
  });

  it('reads tollgate.config.yaml from the working directory', () => {
    const cwd = mkdtempSync(join(tmp, 'default-'));
    writeFileSync(join(cwd, 'tollgate.config.yaml'), 'settings:\n  port: 9002\n');
    const path = join(cwd, 'tollgate.config.yaml');
    expect(loadConfigFile({}, cwd)).toEqual({ path, watchPath: path, config: { settings: { port: 9002 } } });
  });

  it('reads the file TOLLGATE_CONFIG names, relative to the working directory', () => {
    const cwd = mkdtempSync(join(tmp, 'explicit-'));
    mkdirSync(join(cwd, 'conf'));
    writeFileSync(join(cwd, 'conf', 'gw.json'), '{"providers":{"groq":{"api_key":"g"}}}');
    writeFileSync(join(cwd, 'tollgate.config.yaml'), 'settings:\n  port: 1\n');
    const loaded = loadConfigFile({ TOLLGATE_CONFIG: 'conf/gw.json' }, cwd);
    expect(loaded.path).toBe(join(cwd, 'conf', 'gw.json'));
    expect(loaded.config).toEqual({ providers: { groq: { api_key: 'g' } } });
  });

  it('fails with a ConfigError naming a config path that is a directory', () => {
    const cwd = mkdtempSync(join(tmp, 'dir-'));
    mkdirSync(join(cwd, 'conf.yaml'));
    const err = configError(() => loadConfigFile({ TOLLGATE_CONFIG: 'conf.yaml' }, cwd));
    expect(err.message).toBe(`${join(cwd, 'conf.yaml')}: cannot read the config file: it is a directory, not a file`);
  });

  it('reports an invalid file with its path and the field', () => {
    const cwd = mkdtempSync(join(tmp, 'invalid-'));
    writeFileSync(join(cwd, 'tollgate.config.yaml'), 'settings:\n  log_level: loud\n');
    const err = configError(() => loadConfigFile({}, cwd));
    expect(err.message).toContain(join(cwd, 'tollgate.config.yaml'));
    expect(err.message).toContain('settings.log_level');
  });
});
