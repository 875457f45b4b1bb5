import OpenAI from 'openai';
import { expect } from 'vitest';
import { jsonRequest } from './api.js';

/**
 * The management API and virtual-key clients of a running gateway, for tests that create keys and call with them.
 * `url` is read at each call, so the helpers can be made before the gateway starts (in a `beforeAll`).
 */
export function gatewayApi(url: () => string) {
  const api = (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => jsonRequest(url(), method, path, body);
  const createKey = async (fields: Record<string, unknown>): Promise<{ id: string; key: string }> => {
    const created = await api('POST', '/api/keys', fields);
    expect(created.status).toBe(201);
    return { id: created.body.id, key: created.body.key };
  };
  const clientFor = (key: string): OpenAI => new OpenAI({ baseURL: `${url()}/v1`, apiKey: key, maxRetries: 0 });
  return { api, createKey, clientFor };
}
