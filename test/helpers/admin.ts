import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConfigInput as ConfigFile } from '../../src/config/schema.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { createLog } from '../../src/log.js';

export interface AdminResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined for an empty body. */
  body: any;
  /** The raw body, for grepping responses for secrets. */
  text: string;
}

export interface AdminRequestOptions {
  /** Overrides the content type (e.g. `application/merge-patch+json`). */
  contentType?: string;
  /** Sent as is instead of JSON-encoding `body` (bytes for a body that is not UTF-8). */
  raw?: string | Uint8Array;
  /** Overrides the client's admin key for this request; null sends no Authorization header. */
  key?: string | null;
  /** More request headers (`if-match`, say). */
  headers?: Record<string, string>;
}

/** A small fetch-based client for /api, keeping every raw response so tests can check none leaks a secret. */
export class AdminClient {
  readonly seen: AdminResponse[] = [];

  constructor(
    readonly baseUrl: string,
    readonly key: string | null = null,
  ) {}

  async request(method: string, path: string, body?: unknown, options: AdminRequestOptions = {}): Promise<AdminResponse> {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? this.key : options.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    const payload = options.raw ?? (body === undefined ? undefined : JSON.stringify(body));
    if (payload !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    const response = await fetch(`${this.baseUrl}${path}`, { method, headers, ...(payload !== undefined ? { body: payload } : {}) });
    const text = await response.text();
    const result: AdminResponse = { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined, text };
    this.seen.push(result);
    return result;
  }

  get(path: string, options?: AdminRequestOptions): Promise<AdminResponse> {
    return this.request('GET', path, undefined, options);
  }

  put(path: string, body?: unknown, options?: AdminRequestOptions): Promise<AdminResponse> {
    return this.request('PUT', path, body, options);
  }

  patch(path: string, body?: unknown, options?: AdminRequestOptions): Promise<AdminResponse> {
    return this.request('PATCH', path, body, options);
  }

  post(path: string, body?: unknown, options?: AdminRequestOptions): Promise<AdminResponse> {
    return this.request('POST', path, body, options);
  }

  delete(path: string, options?: AdminRequestOptions): Promise<AdminResponse> {
    return this.request('DELETE', path, undefined, options);
  }

  /**
   * A request's log entry once it is written. The log subscriber batches its writes just after the answer ends,
   * so a read made as soon as the client has the response can come before it.
   */
  async logEntry(requestId: string, withinMs = 5_000): Promise<any> {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const found = await this.get(`/api/logs/${encodeURIComponent(requestId)}`);
      if (found.status === 200) return found.body;
      if (Date.now() > deadline) throw new Error(`no log entry for ${requestId} (last status ${found.status})`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** An IPv4 address of this machine that is not loopback, to reach the gateway as a "remote" client; null if there is none. */
export function nonLoopbackAddress(): string | null {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) if (address.family === 'IPv4' && !address.internal) return address.address;
  }
  return null;
}

export interface ExposedGateway {
  gateway: Gateway;
  /** The gateway's port; it listens on every interface. */
  port: number;
  stop(): Promise<void>;
}

/** A gateway listening on 0.0.0.0 (startGateway binds loopback only), so a non-loopback address can reach it. */
export async function startExposedGateway(config: ConfigFile = {}, env: Record<string, string> = {}): Promise<ExposedGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-admin-'));
  const gateway = await createGateway({ config: { ...config, settings: { data_dir: dataDir, ...config.settings } }, env, log: createLog('silent') });
  const url = await gateway.listen({ port: 0, host: '0.0.0.0' });
  return {
    gateway,
    port: Number(new URL(url).port),
    async stop() {
      await gateway.close(500);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
