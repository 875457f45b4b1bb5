/**
 * The one way the dashboard talks to the gateway: the public `/api` endpoints, the same ones a script uses.
 * Failures become an ApiError carrying the API's own `{error: {message, param, code}}`, so forms can show the
 * message next to the field it names.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The request field the API blames (`budget`, `status`), to show the message next to that field. */
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Dispatched on `window` when the API refuses the dashboard's session. */
export const SIGNED_OUT_EVENT = 'tollgate:signed-out';

export type Query = Record<string, string | number | undefined | null>;

/** `/api/logs` + `{status: '5xx', q: ''}` -> `/api/logs?status=5xx` (empty values left out). */
export function apiUrl(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  }
  const search = params.toString();
  return `/api${path}${search ? `?${search}` : ''}`;
}

export async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown; param?: unknown; code?: unknown } };
    const error = body.error;
    if (error && typeof error.message === 'string') {
      return new ApiError(response.status, error.message, typeof error.param === 'string' ? error.param : null, typeof error.code === 'string' ? error.code : null);
    }
  } catch {
    // Not the API's JSON (a proxy's error page, say): fall through to the status line.
  }
  return new ApiError(response.status, `The gateway answered ${response.status} ${response.statusText}`.trim());
}

/**
 * One request to the gateway (`/api`, or `/v1` for a provider's test call): a failure becomes an ApiError, and a
 * refused session hands the dashboard back to its sign-in form.
 */
export async function request(method: string, url: string, body?: unknown, options: { signal?: AbortSignal; headers?: Record<string, string> } = {}): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      signal: options.signal,
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'Cannot reach the gateway. Is it running?');
  }
  if (!response.ok) {
    const error = await errorOf(response);
    // The session ended (expired, signed out elsewhere, the gateway restarted): the sign-in gate takes over.
    if (error.status === 401 && error.code === 'invalid_admin_key') window.dispatchEvent(new CustomEvent(SIGNED_OUT_EVENT));
    throw error;
  }
  return response;
}

async function call<T>(method: string, url: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const response = await request(method, url, body, { signal });
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

export const api = {
  get: <T>(path: string, query?: Query, signal?: AbortSignal): Promise<T> => call<T>('GET', apiUrl(path, query), undefined, signal),
  post: <T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> => call<T>('POST', apiUrl(path), body, signal),
  put: <T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> => call<T>('PUT', apiUrl(path), body, signal),
  patch: <T>(path: string, body: unknown): Promise<T> => call<T>('PATCH', apiUrl(path), body),
  delete: <T>(path: string): Promise<T> => call<T>('DELETE', apiUrl(path)),
};
