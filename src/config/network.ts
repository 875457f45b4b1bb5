import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { NetworkSettings } from '../core/config.js';
import { pemCertificates } from '../network/trusted-ca.js';
import type { ConfigDocument } from './schema.js';
import { ConfigError, type Env } from './secret-ref.js';

type NetworkInput = NonNullable<NonNullable<ConfigDocument['settings']>['network']>;

/** A variable in its lower-case form first, then upper-case (curl's order, and undici's). */
function fromEnv(env: Env, name: string): string | null {
  const value = env[name.toLowerCase()]?.trim() || env[name]?.trim();
  return value ? value : null;
}

/**
 * A proxy URL from the environment, checked so a typo stops the start with the variable's name instead of failing
 * every call. `proxy.internal:3128` without a scheme means http://, as curl takes it.
 */
function proxyFromEnv(env: Env, name: string): string | null {
  const raw = fromEnv(env, name);
  if (raw === null) return null;
  const value = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name}: not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${name}: an http:// or https:// proxy URL is expected, got ${url.protocol}//`);
  return value;
}

/** The certificates of a PEM bundle, each checked to parse, so a wrong file refuses the config naming the field. */
function readCaBundle(path: string): string {
  const where = 'settings.network.ca_file';
  let text: string;
  try {
    text = readFileSync(resolve(path), 'utf8');
  } catch (err) {
    throw new ConfigError(`${where}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const certificates = pemCertificates(text);
  if (certificates.length === 0) throw new ConfigError(`${where}: ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  certificates.forEach((pem, index) => {
    try {
      new X509Certificate(pem);
    } catch (err) {
      throw new ConfigError(`${where}: certificate ${index + 1} in ${path} does not parse (${(err as Error).message})`);
    }
  });
  return certificates.join('\n');
}

/**
 * Network settings: the file over the environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, lower-case forms first).
 * The API may not set them: they reroute every outbound call, keys included, and name a file on this machine.
 * HTTPS destinations fall back to the HTTP proxy when only that is set, as undici (and Node) do.
 */
export function resolveNetwork(api: NetworkInput | undefined, file: NetworkInput | undefined, env: Env): NetworkSettings {
  if (api !== undefined) {
    throw new ConfigError('settings.network: set in the config file or the environment only, not through the API (it reroutes every outbound call and names a file on the gateway\'s machine)');
  }
  const httpProxy = file?.proxy ?? proxyFromEnv(env, 'HTTP_PROXY');
  const httpsProxy = file?.proxy ?? proxyFromEnv(env, 'HTTPS_PROXY') ?? httpProxy;
  const noProxy = file?.no_proxy ? file.no_proxy.join(',') : (fromEnv(env, 'NO_PROXY') ?? '');
  const caFile = file?.ca_file ?? null;
  return { httpProxy, httpsProxy, noProxy, caFile, extraCa: caFile === null ? null : readCaBundle(caFile) };
}
