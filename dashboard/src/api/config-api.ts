import { api, ApiError, request } from './client.js';
import type { TargetHealth } from './types.js';

/**
 * What the providers and routes pages read and write (README "Management API"): the shapes of
 * `/api/providers` and `/api/routes`, and the cheap test call
 * through `/v1/chat/completions` that a provider's "Test" button makes.
 */

export type ConfigSource = 'api' | 'file' | 'env' | 'builtin' | string;

export interface ProviderKeyView {
  id: string;
  /** Masked (`****abcd`), or a reference as written (`env:NAME`). */
  value: string;
  weight: number;
  models: string[] | null;
  /** Out of rotation (absent when in use). */
  disabled?: boolean;
  source: ConfigSource;
}

export interface ProviderView {
  name: string;
  type: string;
  base_url: string;
  keys: ProviderKeyView[];
  source: ConfigSource;
  models: string[];
  /** A Microsoft Entra identity instead of keys (`azure`, `azure-ai`), its client secret masked. */
  auth?: Record<string, string>;
  [field: string]: unknown;
}

export interface RouteView {
  name: string;
  targets: { model: string; weight: number }[];
  fallbacks: string[];
  adaptive?: boolean;
  source: ConfigSource;
  [field: string]: unknown;
}

export interface UnavailableTarget {
  target: string;
  role: 'primary' | 'fallback';
  via: string;
  code: string;
  reason: string;
}

/** `GET /api/routes/:name/health`. */
export interface RouteHealthView {
  name: string;
  route: string | null;
  unavailable?: UnavailableTarget[];
  groups: { name: string; role: 'primary' | 'fallback' | string; targets: TargetHealth[] }[];
}

/** PUT `/api<path>` with a JSON body; the API's validation error comes back as an ApiError. */
export function apiPut<T>(path: string, body: unknown): Promise<T> {
  return api.put<T>(path, body);
}

/**
 * Sets some fields of a provider, leaving the rest where it comes from: a JSON merge patch of the API layer
 * (`PATCH /api/config`) naming exactly the fields the form changed. (A PUT of the whole provider would leave its
 * inherited values inherited too, but the patch sends less and says exactly what the user changed.)
 */
export async function patchProvider(name: string, fields: Record<string, unknown>): Promise<void> {
  await request('PATCH', '/api/config', { providers: { [name]: fields } }, { headers: { 'content-type': 'application/merge-patch+json' } });
}

export const providerPath = (name: string): string => `/providers/${encodeURIComponent(name)}`;
export const keyPath = (provider: string, id: string): string => `${providerPath(provider)}/keys/${encodeURIComponent(id)}`;
/** Route names may hold `/`: always one encoded segment. */
export const routePath = (name: string): string => `/routes/${encodeURIComponent(name)}`;

export interface TestResult {
  provider: string | null;
  model: string | null;
  attempts: string | null;
  text: string;
  ms: number;
}

/**
 * A one-token chat completion through tollgate itself (the same path clients take), not cached, so the answer
 * says whether the provider and its key work now.
 */
export async function testModel(model: string): Promise<TestResult> {
  const started = performance.now();
  const response = await request('POST', '/v1/chat/completions', { model, max_tokens: 1, messages: [{ role: 'user', content: 'ping' }] }, { headers: { 'cache-control': 'no-store' } });
  const body = (await response.json()) as { model?: string; choices?: { message?: { content?: string | null } }[] };
  return {
    provider: response.headers.get('x-tollgate-provider'),
    model: body.model ?? response.headers.get('x-tollgate-model'),
    attempts: response.headers.get('x-tollgate-attempts'),
    text: body.choices?.[0]?.message?.content ?? '',
    ms: Math.round(performance.now() - started),
  };
}

export function asApiError(err: unknown): ApiError {
  return err instanceof ApiError ? err : new ApiError(0, err instanceof Error ? err.message : String(err));
}
