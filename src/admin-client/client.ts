import type {
  AuditPage,
  AuditQuery,
  ConfigDocumentInput,
  ConfigValidation,
  EffectiveConfigView,
  KeyCreate,
  KeyListQuery,
  KeyPage,
  KeyUpdate,
  KeyWithSecret,
  ListOf,
  LogPage,
  LogQuery,
  WrittenLogPage,
  WrittenLogQuery,
  ProviderInput,
  ProviderKeyInput,
  ProviderKeyUpdate,
  ProviderKeyView,
  ProviderView,
  RequestLogEntry,
  RouteInput,
  RouteView,
  TeamCreate,
  TeamRecord,
  TeamUpdate,
  UsageQueryInput,
  UsageReport,
  VirtualKeyView,
} from './types.js';

export interface AdminClientOptions {
  /** The gateway's address, e.g. `http://127.0.0.1:8080` (with or without a trailing slash; `/api` is added). */
  baseUrl: string;
  /** TOLLGATE_ADMIN_KEY, when the gateway requires it (remote administration); without one, /api answers loopback only. */
  adminKey?: string;
  /** Another fetch (a proxy's, a test's); default: the global one. */
  fetch?: typeof fetch;
}

/** A refusal from /api: its HTTP status and the gateway's error (`{ error: { message, type, code, param } }`). */
export class AdminApiError extends Error {
  readonly status: number;
  readonly type: string | null;
  readonly code: string | null;
  readonly param: string | null;

  constructor(status: number, body: unknown, method: string, path: string) {
    const error = (body as { error?: { message?: unknown; type?: unknown; code?: unknown; param?: unknown } } | null)?.error;
    super(`${method} ${path}: ${status} ${typeof error?.message === 'string' ? error.message : 'error'}`);
    this.name = 'AdminApiError';
    this.status = status;
    this.type = typeof error?.type === 'string' ? error.type : null;
    this.code = typeof error?.code === 'string' ? error.code : null;
    this.param = typeof error?.param === 'string' ? error.param : null;
  }
}

type Query = Record<string, string | number | undefined>;

function withQuery(path: string, query: Query | undefined): string {
  const entries = Object.entries(query ?? {}).filter((entry): entry is [string, string | number] => entry[1] !== undefined);
  return entries.length === 0 ? path : `${path}?${new URLSearchParams(entries.map(([name, value]): [string, string] => [name, String(value)])).toString()}`;
}

const segment = encodeURIComponent;

/** The If-Match header of a write conditioned on the config version it was read at (the ETag GET /api/config answers). */
function ifMatch(version: number | undefined): Record<string, string> {
  return version === undefined ? {} : { 'if-match': `"${version}"` };
}

/**
 * A typed client for tollgate's management API (`/api`): virtual keys, teams, providers and their keys, routes,
 * the request log, usage and the live config. Each method is one request; a refusal throws AdminApiError with the
 * status and the gateway's error code. Works in Node 18+ and browsers (only fetch is used).
 *
 *   const admin = new AdminClient({ baseUrl: 'http://127.0.0.1:8080', adminKey: process.env.TOLLGATE_ADMIN_KEY });
 *   const { key } = await admin.keys.create({ name: 'ci', budget: 5 });
 */
export class AdminClient {
  private readonly base: string;
  private readonly fetchImpl: typeof fetch;
  private readonly adminKey: string | undefined;

  constructor(options: AdminClientOptions) {
    this.base = `${options.baseUrl.replace(/\/+$/, '')}/api`;
    this.fetchImpl = options.fetch ?? fetch;
    this.adminKey = options.adminKey;
  }

  /** One request to `/api<path>`: the parsed JSON answer (undefined for 204), or AdminApiError. */
  async request<T>(method: string, path: string, body?: unknown, contentType = 'application/json', extraHeaders: Record<string, string> = {}): Promise<T> {
    const headers: Record<string, string> = { ...extraHeaders, accept: 'application/json' };
    if (this.adminKey) headers.authorization = `Bearer ${this.adminKey}`;
    if (body !== undefined) headers['content-type'] = contentType;
    const response = await this.fetchImpl(`${this.base}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = { error: { message: text.slice(0, 200) } };
    }
    if (!response.ok) throw new AdminApiError(response.status, parsed, method, path);
    return parsed as T;
  }

  /** Virtual keys: the secret (`key`) is in the answers to `create` and `rotate` only. */
  readonly keys = {
    create: (body: KeyCreate): Promise<KeyWithSecret> => this.request('POST', '/keys', body),
    /**
     * Oldest first: every key, or with `limit` one page; follow `next_after` with `after`. With `ids`, just those keys;
     * with `fields`, only those fields of each (the rest of the answer's keys are then absent, whatever the type says).
     */
    list: (query: KeyListQuery = {}): Promise<KeyPage> => {
      const { ids, fields, ...rest } = query;
      return this.request('GET', withQuery('/keys', { ...rest, ids: ids?.join(','), fields: fields?.join(',') }));
    },
    get: (id: string): Promise<VirtualKeyView> => this.request('GET', `/keys/${segment(id)}`),
    update: (id: string, patch: KeyUpdate): Promise<VirtualKeyView> => this.request('PATCH', `/keys/${segment(id)}`, patch),
    delete: (id: string): Promise<void> => this.request('DELETE', `/keys/${segment(id)}`),
    /** A new secret; the old one stops working at once. */
    rotate: (id: string): Promise<KeyWithSecret> => this.request('POST', `/keys/${segment(id)}/rotate`),
  };

  /** Teams: a budget and limits their keys share. Deleting a team that keys still name is a 409. */
  readonly teams = {
    create: (body: TeamCreate): Promise<TeamRecord> => this.request('POST', '/teams', body),
    list: (): Promise<ListOf<TeamRecord>> => this.request('GET', '/teams'),
    get: (id: string): Promise<TeamRecord> => this.request('GET', `/teams/${segment(id)}`),
    update: (id: string, patch: TeamUpdate): Promise<TeamRecord> => this.request('PATCH', `/teams/${segment(id)}`, patch),
    delete: (id: string): Promise<void> => this.request('DELETE', `/teams/${segment(id)}`),
  };

  /** Providers and their keys (values come back masked). A provider the file or tollgate defines survives a delete. */
  readonly providers = {
    list: (): Promise<ListOf<ProviderView>> => this.request('GET', '/providers'),
    get: (name: string): Promise<ProviderView> => this.request('GET', `/providers/${segment(name)}`),
    put: (name: string, body: ProviderInput): Promise<ProviderView> => this.request('PUT', `/providers/${segment(name)}`, body),
    delete: (name: string): Promise<ProviderView | undefined> => this.request('DELETE', `/providers/${segment(name)}`),
    keys: {
      list: (provider: string): Promise<ListOf<ProviderKeyView>> => this.request('GET', `/providers/${segment(provider)}/keys`),
      add: (provider: string, body: ProviderKeyInput): Promise<ProviderKeyView> => this.request('POST', `/providers/${segment(provider)}/keys`, body),
      update: (provider: string, id: string, patch: ProviderKeyUpdate): Promise<ProviderKeyView> =>
        this.request('PATCH', `/providers/${segment(provider)}/keys/${segment(id)}`, patch),
      delete: (provider: string, id: string): Promise<void> => this.request('DELETE', `/providers/${segment(provider)}/keys/${segment(id)}`),
    },
  };

  /** Routes: a name of your own standing for weighted targets and a fallback chain. */
  readonly routes = {
    list: (): Promise<ListOf<RouteView>> => this.request('GET', '/routes'),
    get: (name: string): Promise<RouteView> => this.request('GET', `/routes/${segment(name)}`),
    put: (name: string, body: RouteInput): Promise<RouteView> => this.request('PUT', `/routes/${segment(name)}`, body),
    delete: (name: string): Promise<RouteView | undefined> => this.request('DELETE', `/routes/${segment(name)}`),
    /** Live weights, breakers and health of a route's targets (or of one `<provider>/<model>`). */
    health: (name: string): Promise<Record<string, unknown>> => this.request('GET', `/routes/${segment(name)}/health`),
  };

  /** The request log, newest first. */
  readonly logs = {
    list: (query: LogQuery = {}): Promise<LogPage> => this.request('GET', withQuery('/logs', query as Query)),
    /** One request by the `x-request-id` its answer carried. */
    get: (requestId: string): Promise<RequestLogEntry> => this.request('GET', `/logs/${segment(requestId)}`),
    /** The records written after a cursor, oldest write first: every record once, for a log shipper (README "Shipping the log"). */
    written: (query: WrittenLogQuery): Promise<WrittenLogPage> => this.request('GET', withQuery('/logs', query as unknown as Query)),
  };

  /** Spend, tokens, requests and errors per group and interval. */
  usage(query: UsageQueryInput = {}): Promise<UsageReport> {
    return this.request('GET', withQuery('/usage', query as Query));
  }

  /** The live config: the effective view, the API layer's changes, and a dry run. */
  readonly config = {
    get: (): Promise<EffectiveConfigView> => this.request('GET', '/config'),
    /**
     * Replaces the API layer with a whole document (the file's shape). With `ifVersion` (the `version` read), applied
     * only while the config is still at that version, else AdminApiError 412 `config_version_mismatch`.
     */
    put: (document: ConfigDocumentInput, options: { ifVersion?: number } = {}): Promise<EffectiveConfigView> =>
      this.request('PUT', '/config', document, 'application/json', ifMatch(options.ifVersion)),
    /** A JSON merge patch (RFC 7396) of the API layer; `ifVersion` as for `put`. */
    patch: (patch: Record<string, unknown>, options: { ifVersion?: number } = {}): Promise<EffectiveConfigView> =>
      this.request('PATCH', '/config', patch, 'application/merge-patch+json', ifMatch(options.ifVersion)),
    validate: (document: ConfigDocumentInput): Promise<ConfigValidation> => this.request('POST', '/config/validate', document),
    /** The config document's JSON Schema, with the loaded plugins' options. */
    schema: (): Promise<Record<string, unknown>> => this.request('GET', '/config/schema'),
  };

  /** Who changed what, newest first: filtered, one page at a time (follow `next_before` with `before`). */
  audit(query: AuditQuery = {}): Promise<AuditPage> {
    return this.request('GET', withQuery('/audit', query as Query));
  }
}
