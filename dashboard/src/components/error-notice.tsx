import type { ApiError } from '../api/client.js';

/**
 * An API failure as the page shows it: the API's own message, and for a refused `/api` what the user can do
 * (the dashboard has no sign-in yet, so it works where `/api` answers without a key: on the gateway's machine).
 */
export function ErrorNotice({ error }: { error: ApiError | null }) {
  if (!error) return null;
  const refused = error.status === 401 || error.status === 403;
  return (
    <div class="notice notice-error" role="alert">
      <strong>{refused ? 'The management API refused the dashboard' : 'Something went wrong'}</strong>
      {error.status > 0 ? ` (${error.status})` : ''}: {error.message}
      {refused ? (
        <p>
          The dashboard cannot sign in yet. It works when <code>TOLLGATE_ADMIN_KEY</code> is not set and the browser runs on the
          gateway's own machine (the API then answers loopback clients without a key).
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
