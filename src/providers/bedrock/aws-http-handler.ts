import { getGlobalDispatcher, request, type Dispatcher } from 'undici';

/**
 * The HTTP client AWS's credential chain calls STS (web identity, assumed roles) and IAM Identity Center (SSO, its
 * token refresh) with: the gateway's own outbound dispatcher, so those calls take `settings.network`'s proxy,
 * no_proxy and extra CAs like every other outbound call. The SDK's default client (node:https with its own agent)
 * knows none of them, so behind a proxy-only egress or a company CA a role's credentials could not be had.
 *
 * It keeps the SDK's HttpHandler contract (`handle(request, {abortSignal, requestTimeout})` answering
 * `{response: {statusCode, headers, body}}`, the body a Node stream), the shape @smithy/node-http-handler answers.
 */

/** The parts of a Smithy HttpRequest this reads. */
interface SdkRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query?: Record<string, string | Array<string | null> | null>;
  headers: Record<string, string>;
  body?: unknown;
}

interface SdkResponse {
  statusCode: number;
  reason?: string;
  headers: Record<string, string>;
  body: NodeJS.ReadableStream;
}

/** Headers undici sets itself and refuses from a caller. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect']);

/** RFC 3986 escaping, as the SDK's own query builder does (signed requests sign the query so escaped). */
function escape(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function queryString(query: SdkRequest['query']): string {
  if (!query) return '';
  const parts: string[] = [];
  for (const key of Object.keys(query).sort()) {
    const value = query[key];
    if (Array.isArray(value)) for (const each of value) parts.push(`${escape(key)}=${escape(each ?? '')}`);
    else parts.push(typeof value === 'string' ? `${escape(key)}=${escape(value)}` : escape(key));
  }
  return parts.join('&');
}

function urlOf(req: SdkRequest): string {
  const query = queryString(req.query);
  return `${req.protocol}//${req.hostname}${req.port ? `:${req.port}` : ''}${req.path}${query ? `?${query}` : ''}`;
}

export class DispatcherHttpHandler {
  /**
   * `dispatcherOf` is read per request: a config change to the network settings swaps the gateway's dispatcher, and a
   * chain, which lives across config versions, takes the new one from its next call.
   */
  constructor(
    private readonly dispatcherOf: () => Dispatcher | undefined,
    private readonly requestTimeoutMs: number,
  ) {}

  async handle(req: SdkRequest, options: { abortSignal?: AbortSignal; requestTimeout?: number } = {}): Promise<{ response: SdkResponse }> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name.toLowerCase())) headers[name] = value;
    const timeout = AbortSignal.timeout(options.requestTimeout ?? this.requestTimeoutMs);
    // The SDK's signal is a native AbortSignal on Node; anything else (a polyfill) is left to the timeout.
    const signal = options.abortSignal instanceof AbortSignal ? AbortSignal.any([options.abortSignal, timeout]) : timeout;
    const answer = await request(urlOf(req), {
      method: req.method as Dispatcher.HttpMethod,
      headers,
      body: req.body === undefined || req.body === null ? null : (req.body as string | Uint8Array),
      dispatcher: this.dispatcherOf() ?? getGlobalDispatcher(),
      signal,
    });
    const flat: Record<string, string> = {};
    for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
    return { response: { statusCode: answer.statusCode, headers: flat, body: answer.body } };
  }

  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): Record<string, never> {
    return {};
  }

  /** The dispatcher is the gateway's, closed with it: nothing of this handler's own to close. */
  destroy(): void {}
}
