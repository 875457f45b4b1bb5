import { useState } from 'preact/hooks';
import { api, ApiError } from '../api/client.js';
import { FormField } from '../components/form-field.js';

/** The admin key, entered once: the gateway answers with an httpOnly session cookie and the key is dropped. */
export function SignInPage({ onSignedIn, expired = false }: { onSignedIn: () => void; expired?: boolean }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    setBusy(true);
    try {
      await api.post('/session', { admin_key: key });
      setKey('');
      setError(null);
      onSignedIn();
    } catch (err) {
      // A wrong key is the form's own error, shown next to the field.
      setError(err instanceof ApiError ? new ApiError(err.status, err.message, err.param ?? 'admin_key', err.code) : new ApiError(0, String(err), 'admin_key'));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in" id="main">
      <h1>Sign in to tollgate</h1>
      {expired ? (
        <p class="notice" role="status">
          The session ended (the gateway restarted, its admin key changed, or 12 hours passed). Sign in again: the page you were on keeps what you typed.
        </p>
      ) : null}
      <p class="muted">
        This gateway has an admin key (<code>TOLLGATE_ADMIN_KEY</code>). Enter it to manage the gateway; the browser then keeps a
        session for 12 hours, in a cookie scripts cannot read.
      </p>
      <form onSubmit={(event) => void submit(event)}>
        <FormField name="admin_key" label="Admin key" scope="sign-in" error={error}>
          {(aria) => (
            <input {...aria} type="password" autoComplete="current-password" required value={key} onInput={(event) => setKey((event.target as HTMLInputElement).value)} />
          )}
        </FormField>
        <button type="submit" disabled={busy || key === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
