import { authHeaders } from './auth-headers.js';
import type { Target } from '../core/provider.js';

/** Appends a path to a base URL, with exactly one slash between them. */
export function joinUrl(base: string, path: string): string {
  return base.endsWith('/') ? `${base}${path.slice(1)}` : `${base}${path}`;
}

/**
 * The headers of a JSON request to a target: the vendor's recommended headers, then the operator's, then the
 * credential (so neither can replace it by accident). `extra` goes right after the content type.
 */
export function jsonHeaders(target: Target, extra: Record<string, string> = {}): Record<string, string> {
  return {
    'content-type': 'application/json',
    ...extra,
    ...target.provider.vendor.defaultHeaders,
    ...target.provider.headers,
    ...authHeaders(target.provider.vendor.auth, target.apiKey),
  };
}
