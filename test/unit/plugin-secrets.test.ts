import { describe, expect, it } from 'vitest';
import { resolvedOptions } from '../../src/config/plugin-options.js';
import { isSecretOption, mapOptionStrings, mapPluginSecrets, maskPluginEntries, maskValuesIn, restoreMaskedPluginEntries, secretOptionValues } from '../../src/config/plugin-secrets.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';

const entry = (options: unknown) => ({ name: 'dlp', path: 'dlp.mjs', options });

describe('plugin option secrets', () => {
  it('a declared path covers everything under it, and * stands for any one key or index', () => {
    expect(isSecretOption(['api_key'], ['api_key'])).toBe(true);
    expect(isSecretOption(['headers'], ['headers', 'x-token'])).toBe(true);
    expect(isSecretOption(['endpoints.*.token'], ['endpoints', '1', 'token'])).toBe(true);
    expect(isSecretOption(['endpoints.*.token'], ['endpoints', '1', 'url'])).toBe(false);
    expect(isSecretOption(['auth.token'], ['auth'])).toBe(false);
    expect(isSecretOption([], ['api_key'])).toBe(false);
  });

  it('masks declared strings at any depth, shows references whole and leaves the rest as written', () => {
    const options = { api_key: 'dlp-secret-value-abcd', headers: { 'x-a': 'header-secret-1234', 'x-b': 'env:DLP_B' }, endpoints: [{ url: 'https://a', token: 'endpoint-token-wxyz' }], mask: '****', limit: 3 };
    const [masked] = maskPluginEntries([entry(options)], () => ['api_key', 'headers', 'endpoints.*.token']);
    expect(masked?.options).toEqual({ api_key: '****abcd', headers: { 'x-a': '****1234', 'x-b': 'env:DLP_B' }, endpoints: [{ url: 'https://a', token: '****wxyz' }], mask: '****', limit: 3 });
  });

  it('restores a masked secret from the stored entry of the same name, and refuses one that stands for nothing', () => {
    const stored = [entry({ api_key: 'dlp-secret-value-abcd', note: 'a' })];
    const secrets = () => ['api_key'];
    const refuse = (where: string) => new Error(`refused ${where}`);
    const isMasked = (value: string) => value.startsWith('****');
    expect(restoreMaskedPluginEntries([entry({ api_key: '****abcd', note: 'b' })], stored, secrets, isMasked, refuse)[0]?.options).toEqual({ api_key: 'dlp-secret-value-abcd', note: 'b' });
    expect(() => restoreMaskedPluginEntries([entry({ api_key: '****zzzz' })], stored, secrets, isMasked, refuse)).toThrow('refused plugins.0.options.api_key');
    expect(restoreMaskedPluginEntries([entry({ api_key: 'a-new-key-value-0000' })], stored, secrets, isMasked, refuse)[0]?.options).toEqual({ api_key: 'a-new-key-value-0000' });
  });

  it('seals and unseals only the strings the predicate names', () => {
    const sealed = mapPluginSecrets([entry({ api_key: 'k', other: 'o' })], (_name, path) => path[0] === 'api_key', (value) => `sealed(${value})`);
    expect(sealed[0]?.options).toEqual({ api_key: 'sealed(k)', other: 'o' });
  });

  it('reads env: and file: references at any depth, naming the option that cannot be read', () => {
    const read = (value: string, where: string): string => {
      if (value === 'env:SET') return 'value';
      if (value.startsWith('env:')) throw new Error(`${where}: environment variable ${value.slice(4)} is not set`);
      return value;
    };
    expect(resolvedOptions({ a: ['env:SET', { b: 'env:SET' }], n: 1, plain: 'x' }, 'plugins.0.options', read)).toEqual({ a: ['value', { b: 'value' }], n: 1, plain: 'x' });
    expect(() => resolvedOptions({ a: [{ b: 'env:UNSET' }] }, 'plugins.0.options', read)).toThrow('plugins.0.options.a.0.b: environment variable UNSET is not set');
  });

  it('reads references only from the config file: a string like one stored through the API by an older version stays the literal it was', () => {
    const plugins = [entry({ api_key: 'env:DLP_KEY' })];
    expect(resolveRuntimeConfig({ api: {}, file: { plugins } }, { DLP_KEY: 'from-env' }, 1).pluginOptions.get('dlp')).toEqual({ api_key: 'from-env' });
    expect(resolveRuntimeConfig({ api: { plugins }, file: {} }, { DLP_KEY: 'from-env' }, 1).pluginOptions.get('dlp')).toEqual({ api_key: 'env:DLP_KEY' });
  });

  it("finds the secret values of a plugin's options (declared, or read from a reference) and masks them in a message", () => {
    const written = { api_key: 'literal-declared-key-0001', pin: 482913, region: 'env:REGION', plain: 'plain-value-0002', list: ['file:/run/a'], short: 'env:S' };
    const resolved = { ...written, region: 'region-from-env-0003', list: ['token-from-file-0004'], short: 'abc' };
    const values = secretOptionValues(written, resolved, ['api_key', 'pin']);
    expect(values.sort()).toEqual(['482913', 'literal-declared-key-0001', 'region-from-env-0003', 'token-from-file-0004']);
    expect(maskValuesIn('refused literal-declared-key-0001 and 482913 in region-from-env-0003, not plain-value-0002', values)).toBe(
      'refused ****0001 and **** in ****0003, not plain-value-0002',
    );
  });
});

describe('plugin options with a __proto__ key', () => {
  it('keep it as an option of their own when references are read and secrets mapped, never as the copy\'s prototype', () => {
    const options = JSON.parse('{"__proto__": {"admin": true}, "nested": {"__proto__": {"admin": true}}, "token": "env:TOKEN"}') as Record<string, unknown>;
    const resolved = resolvedOptions(options, 'plugins.p.options', (value) => (value === 'env:TOKEN' ? 'secret' : value)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(resolved)).toBe(Object.prototype);
    expect(resolved.admin).toBeUndefined();
    expect(Object.keys(resolved)).toEqual(['__proto__', 'nested', 'token']);
    expect(Object.getOwnPropertyDescriptor(resolved, '__proto__')?.value).toEqual({ admin: true });
    expect((resolved.nested as Record<string, unknown>).admin).toBeUndefined();
    expect(resolved.token).toBe('secret');
    const mapped = mapOptionStrings(options, (value) => value.toUpperCase()) as Record<string, unknown>;
    expect(mapped.admin).toBeUndefined();
    expect(Object.keys(mapped)).toContain('__proto__');
  });
});
