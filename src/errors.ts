import { quoteInput } from './quote-input.js';

/** The longest message a GatewayError carries. */
export const MAX_ERROR_MESSAGE_CHARS = 4_000;

/**
 * The one error type every layer throws. The HTTP layer renders it in the client's dialect; nothing else
 * decides status codes.
 */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'insufficient_quota'
  | 'upstream_error'
  | 'timeout_error'
  | 'service_unavailable'
  | 'server_error'
  // Upstream error types are passed through verbatim, so the set is open.
  | (string & {});

export interface GatewayErrorInit {
  status: number;
  type: ErrorType;
  code: string | null;
  message: string;
  param?: string | null;
  /** Whether another attempt (same or other target) may succeed. Used by routing. */
  retryable?: boolean;
  /** Extra response headers, e.g. retry-after on 429. */
  headers?: Record<string, string>;
  /** Upstream status when the error came from a provider; kept for logs and headers. */
  upstreamStatus?: number;
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string | null;
  readonly param: string | null;
  readonly retryable: boolean;
  readonly headers: Record<string, string>;
  readonly upstreamStatus: number | undefined;

  constructor(init: GatewayErrorInit) {
    // The last line of defence against an error that echoes a huge input whole: each site quotes inputs with
    // `quoteInput`, and no message, whatever it holds, grows past this.
    super(init.message.length > MAX_ERROR_MESSAGE_CHARS ? quoteInput(init.message, MAX_ERROR_MESSAGE_CHARS) : init.message);
    this.name = 'GatewayError';
    this.status = init.status;
    this.type = init.type;
    this.code = init.code;
    this.param = init.param ?? null;
    this.retryable = init.retryable ?? false;
    this.headers = init.headers ?? {};
    this.upstreamStatus = init.upstreamStatus;
  }

  static badRequest(message: string, param: string | null = null, code: string | null = null): GatewayError {
    return new GatewayError({ status: 400, type: 'invalid_request_error', code, message, param });
  }

  static notFound(message: string, param: string | null = null, code: string | null = null): GatewayError {
    return new GatewayError({ status: 404, type: 'invalid_request_error', code, message, param });
  }

  static internal(message = 'Internal gateway error.'): GatewayError {
    return new GatewayError({ status: 500, type: 'server_error', code: 'internal_error', message });
  }
}

/** Anything thrown that is not a GatewayError becomes a 500 without leaking its message or stack. */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return GatewayError.internal();
}
