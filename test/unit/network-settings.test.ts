import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import type { ConfigDocument } from '../../src/config/schema.js';
import { parseConfigDocument } from '../../src/config/load-file.js';
import { pemCertificates, trustedCertificates } from '../../src/network/trusted-ca.js';
import { makeTestCa } from '../helpers/test-ca.js';

const ca = makeTestCa();
const dir = mkdtempSync(join(tmpdir(), 'tollgate-network-unit-'));
afterAll(() => {
  ca.remove();
  rmSync(dir, { recursive: true, force: true });
});

function network(file: ConfigDocument['settings'] = {}, env: Record<string, string> = {}, api: ConfigDocument['settings'] = undefined) {
  return resolveRuntimeConfig({ api: api ? { settings: api } : {}, file: parseConfigDocument({ settings: file }, 'test') }, env, 1).settings.network;
}

describe('network settings', () => {
  it('nothing configured: direct, no extra CA', () => {
    expect(network()).toEqual({ httpProxy: null, httpsProxy: null, noProxy: '', caFile: null, extraCa: null });
  });

  it('reads the proxy variables, lower-case forms first, a bare host:port as http://, and HTTPS falls back to HTTP_PROXY', () => {
    expect(network({}, { HTTPS_PROXY: 'http://upper:1', https_proxy: 'http://lower:2', HTTP_PROXY: 'proxy.internal:3128', NO_PROXY: 'a,.b' })).toMatchObject({
      httpsProxy: 'http://lower:2',
      httpProxy: 'http://proxy.internal:3128',
      noProxy: 'a,.b',
    });
    expect(network({}, { HTTP_PROXY: 'http://only-http:3128' })).toMatchObject({ httpProxy: 'http://only-http:3128', httpsProxy: 'http://only-http:3128' });
  });

  it('the file overrides the environment', () => {
    const resolved = network({ network: { proxy: 'http://file:3128', no_proxy: ['localhost', '.corp'] } }, { HTTPS_PROXY: 'http://env:1', HTTP_PROXY: 'http://env:2', NO_PROXY: '*' });
    expect(resolved).toMatchObject({ httpProxy: 'http://file:3128', httpsProxy: 'http://file:3128', noProxy: 'localhost,.corp' });
  });

  it('refuses a proxy variable that is not an http(s) URL, naming it', () => {
    expect(() => network({}, { HTTPS_PROXY: 'socks5://proxy:1080' })).toThrow(/HTTPS_PROXY: an http:\/\/ or https:\/\/ proxy URL is expected/);
  });

  it('reads ca_file when the config is applied, and refuses a missing file or one without certificates', () => {
    expect(network({ network: { ca_file: ca.caFile } }).extraCa).toBe(ca.caPem.trim());
    expect(() => network({ network: { ca_file: join(dir, 'missing.pem') } })).toThrow(/settings\.network\.ca_file: cannot read .*missing\.pem \(ENOENT\)/);
    const notPem = join(dir, 'not.pem');
    writeFileSync(notPem, 'just text');
    expect(() => network({ network: { ca_file: notPem } })).toThrow(/settings\.network\.ca_file: .* holds no PEM certificate/);
    const broken = join(dir, 'broken.pem');
    writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    expect(() => network({ network: { ca_file: broken } })).toThrow(/certificate 1 in .* does not parse/);
  });

  it('is refused through the API', () => {
    expect(() => network({}, {}, { network: { proxy: 'http://api:1' } })).toThrow(/settings\.network: set in the config file or the environment only/);
  });
});

describe('the trusted CA list', () => {
  it('adds the bundle to Node\'s default roots and the NODE_EXTRA_CA_CERTS it loaded, instead of replacing them', () => {
    const trusted = trustedCertificates(ca.caPem);
    const extraFile = process.env.NODE_EXTRA_CA_CERTS;
    const fromEnv = extraFile ? pemCertificates(readFileSync(extraFile, 'utf8')) : [];
    expect(trusted).toEqual([...rootCertificates, ...fromEnv, ca.caPem.trim()]);
  });
});
