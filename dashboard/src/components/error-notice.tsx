import type { ApiError } from '../api/client.js';

/**
 * An API failure as the page shows it: the API's own message, and for a refused `/api` what the user can do
 * (a 401 sends the dashboard back to its sign-in form; a 403 is the API's loopback rule or a refused origin).
 */
export function ErrorNotice({ error }: { error: ApiError | null }) {
  if (!error) return null;
  const refused = error.status === 401 || error.status === 403;
  return (
    <div class="notice notice-error" role="alert">
      <strong>{refused ? 'The management API refused the dashboard' : 'Something went wrong'}</strong>
      {error.status > 0 ? ` (${error.status})` : ''}: {error.message}
      {error.status === 403 && error.code === 'admin_api_loopback_only' ? (
        <p>
          No admin key is configured, so the management API answers only browsers on the gateway's own machine. Set{' '}
          <code>TOLLGATE_ADMIN_KEY</code> to use the dashboard from elsewhere; it will then ask for that key.
        </p>
      ) : null}
    </div>
  );
}

/** The message a form shows next to the field the API named (`param`), or null when it named another one. */
export function fieldError(error: ApiError | null, field: string): string | null {
  if (!error || !error.param) return null;
  return error.param === field || error.param.startsWith(`${field}.`) || error.param.startsWith(`${field}[`) ? error.message : null;
}

/** The API's message under the field it named; `id` is what the control's aria-describedby points to. */
export function FieldProblem({ id, problem }: { id: string; problem: string | null }) {
  if (!problem) return null;
  return (
    <span class="field-error" id={id}>
      {problem}
    </span>
  );
}
