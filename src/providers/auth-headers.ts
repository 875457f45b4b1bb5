import type { AuthScheme } from '../core/provider.js';

/** The credential header(s) for a provider's auth scheme; none when there is no key (keyless local servers). */
export function authHeaders(scheme: AuthScheme, apiKey: string | null): Record<string, string> {
  if (apiKey === null || scheme.kind === 'none') return {};
  if (scheme.kind === 'bearer') return { authorization: `Bearer ${apiKey}` };
  return { [scheme.header]: apiKey };
}
