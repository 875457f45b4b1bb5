import type { GatewayError } from '../core/errors.js';
import { isSensitiveHeader, maskUrl } from './present.js';
import type { ConfigDocument, ProviderConfig } from './schema.js';
import { maskSecret } from './secret-box.js';
import { gatewayError } from '../core/errors.js';

const MASKED = /^\*{4}/;
/** A base URL whose userinfo was masked by `maskUrl`. */
const MASKED_USERINFO = /^[a-z]+:\/\/\*{4}@/i;

function maskedValueError(where: string): GatewayError {
  return gatewayError('masked_secret', `${where} is a masked secret that matches no stored value; send the real value (or, for a key, its id and the masked value as read).`, { param: where });
}

/**
 * The stored base URL a masked one read from the API stands for. The view shows the URL requests go to, which may
 * be the stored one with the vendor's version path completed (`http://****@host` read as `http://****@host/v1`):
 * that extension is kept on the stored URL's own credentials.
 */
function unmaskedBaseUrl(masked: string, stored: string): string | null {
  const storedMasked = maskUrl(stored);
  if (storedMasked === masked) return stored;
  const prefix = storedMasked.replace(/\/+$/, '');
  if (masked.startsWith(`${prefix}/`)) return `${stored.replace(/\/+$/, '')}${masked.slice(prefix.length)}`;
  return null;
}

/**
 * A client that read config from the API and writes it back sends masked secrets (`****abcd`). Each is
 * swapped for the stored value it stands for: keys by id, credential headers by name. A masked value that
 * stands for nothing is refused rather than stored as if it were a key.
 */
export function restoreMaskedProvider(name: string, next: ProviderConfig, previous: ProviderConfig | undefined, fallbackBaseUrl?: string): ProviderConfig {
  if (next.api_key && MASKED.test(next.api_key)) throw maskedValueError(`providers.${name}.api_key`);
  let baseUrl = next.base_url;
  if (baseUrl !== undefined && MASKED_USERINFO.test(baseUrl)) {
    const masked = baseUrl;
    let restored: string | null = null;
    for (const candidate of [previous?.base_url, fallbackBaseUrl]) {
      if (candidate !== undefined) restored ??= unmaskedBaseUrl(masked, candidate);
    }
    if (restored === null) throw maskedValueError(`providers.${name}.base_url`);
    baseUrl = restored;
  }
  const keys = next.keys?.map((key, i) => {
    if (!MASKED.test(key.value)) return key;
    const stored = key.id ? previous?.keys?.find((candidate) => candidate.id === key.id) : undefined;
    if (!stored || maskSecret(stored.value) !== key.value) throw maskedValueError(`providers.${name}.keys.${i}.value`);
    return { ...key, value: stored.value };
  });
  let headers = next.headers;
  if (headers) {
    headers = { ...headers };
    for (const [header, value] of Object.entries(headers)) {
      if (!isSensitiveHeader(header) || !MASKED.test(value)) continue;
      const stored = previous?.headers?.[header];
      if (stored === undefined || maskSecret(stored) !== value) throw maskedValueError(`providers.${name}.headers.${header}`);
      headers[header] = stored;
    }
  }
  return { ...next, ...(baseUrl !== undefined ? { base_url: baseUrl } : {}), ...(keys ? { keys } : {}), ...(headers ? { headers } : {}) };
}

/** `lower` is the file layer: a masked base URL read from the effective view may stand for the file's. */
export function restoreMaskedDocument(next: ConfigDocument, previous: ConfigDocument, lower?: ConfigDocument): ConfigDocument {
  const alerts = restoreMaskedAlerts(next.alerts, previous.alerts);
  if (!next.providers) return alerts ? { ...next, alerts } : next;
  const providers: NonNullable<ConfigDocument['providers']> = {};
  for (const [name, provider] of Object.entries(next.providers)) {
    providers[name] = restoreMaskedProvider(name, provider, previous.providers?.[name], lower?.providers?.[name]?.base_url);
  }
  return { ...next, providers, ...(alerts ? { alerts } : {}) };
}

type AlertsDocument = NonNullable<ConfigDocument['alerts']>;
type ChannelDocument = NonNullable<AlertsDocument['channels']>[string];

/**
 * The alerts section read from the API (`?layer=api`) and written back: each masked channel secret (a webhook's
 * secret or header value, a chat URL, a routing key, an SMTP password) is swapped for the stored value of the
 * same channel and field it stands for; one that stands for nothing is refused.
 */
function restoreMaskedAlerts(next: ConfigDocument['alerts'], previous: ConfigDocument['alerts']): ConfigDocument['alerts'] {
  if (!next?.channels) return next;
  const channels: NonNullable<AlertsDocument['channels']> = {};
  for (const [name, channel] of Object.entries(next.channels)) channels[name] = restoreMaskedChannel(name, channel, previous?.channels?.[name]);
  return { ...next, channels };
}

function restoreMaskedChannel(name: string, next: ChannelDocument, previous: ChannelDocument | undefined): ChannelDocument {
  const restore = (value: string, stored: string | undefined, field: string): string => {
    if (!MASKED.test(value)) return value;
    if (stored !== undefined && maskSecret(stored) === value) return stored;
    throw maskedValueError(`alerts.channels.${name}.${field}`);
  };
  switch (next.type) {
    case 'webhook': {
      const stored = previous?.type === 'webhook' ? previous : undefined;
      const headers = next.headers && Object.fromEntries(Object.entries(next.headers).map(([header, value]) => [header, restore(value, stored?.headers?.[header], `headers.${header}`)]));
      return { ...next, ...(next.secret !== undefined ? { secret: restore(next.secret, stored?.secret, 'secret') } : {}), ...(headers ? { headers } : {}) };
    }
    case 'slack':
    case 'teams':
    case 'discord':
      return { ...next, url: restore(next.url, previous?.type === next.type ? previous.url : undefined, 'url') };
    case 'pagerduty':
      return { ...next, routing_key: restore(next.routing_key, previous?.type === 'pagerduty' ? previous.routing_key : undefined, 'routing_key') };
    case 'email':
      return next.password === undefined ? next : { ...next, password: restore(next.password, previous?.type === 'email' ? previous.password : undefined, 'password') };
  }
}
