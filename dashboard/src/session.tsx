import { createContext, type ComponentChildren } from 'preact';
import { useCallback, useContext, useEffect, useState } from 'preact/hooks';
import { api, ApiError, SIGNED_OUT_EVENT } from './api/client.js';
import { SignInPage } from './pages/sign-in.js';

interface SessionState {
  /** The gateway has TOLLGATE_ADMIN_KEY set: the dashboard signs in with it. */
  adminKeyRequired: boolean;
  /** Ends the session, then shows the sign-in form; rejects (an ApiError) when the session may still be valid. */
  signOut(): Promise<void>;
}

const SessionContext = createContext<SessionState>({ adminKeyRequired: false, signOut: async () => undefined });

export function useSession(): SessionState {
  return useContext(SessionContext);
}

/**
 * Shows the dashboard once `/api` will answer it: at once when no admin key is configured (the API's loopback
 * rule applies, and a refused page says so), otherwise after signing in with the admin key, which the gateway
 * exchanges for an httpOnly session cookie (the page never keeps the key). A refused session brings the form back.
 */
export function SessionGate({ children }: { children: ComponentChildren }) {
  const [status, setStatus] = useState<{ adminKeyRequired: boolean; signedIn: boolean } | null>(null);
  const [problem, setProblem] = useState<ApiError | null>(null);
  /**
   * The session ended under an open page (a restart forgets sessions, a new admin key refuses them): the page stays
   * mounted, hidden, behind the sign-in form, so what the operator was typing (a new key, the config text) is there
   * to send again after signing in. Unmounted, it was lost. Signing out on purpose does not keep it.
   */
  const [kept, setKept] = useState(false);

  const refresh = useCallback(async () => {
    try {
      const answer = await api.get<{ admin_key_required: boolean; signed_in: boolean }>('/session');
      setStatus({ adminKeyRequired: answer.admin_key_required, signedIn: answer.signed_in });
      setProblem(null);
    } catch (err) {
      setProblem(err instanceof ApiError ? err : new ApiError(0, String(err)));
    }
  }, []);

  useEffect(() => {
    void refresh();
    const onSignedOut = (): void =>
      setStatus((current) => {
        if (current?.signedIn) setKept(true);
        return current ? { ...current, signedIn: false } : current;
      });
    window.addEventListener(SIGNED_OUT_EVENT, onSignedOut);
    return () => window.removeEventListener(SIGNED_OUT_EVENT, onSignedOut);
  }, [refresh]);

  // The sign-in form only once the session has ended: a failed DELETE (a proxy's error, the gateway unreachable)
  // leaves the cookie valid, so a reload would sign straight back in. Unless the gateway then says this browser is
  // signed out after all, the failure is the caller's to show.
  const signOut = useCallback(async () => {
    try {
      await api.delete('/session');
    } catch (err) {
      const answer = await api.get<{ signed_in: boolean }>('/session').catch(() => null);
      if (answer?.signed_in !== false) throw err instanceof ApiError ? err : new ApiError(0, String(err));
    }
    setKept(false);
    setStatus((current) => (current ? { ...current, signedIn: false } : current));
  }, []);

  if (problem && !status) {
    return (
      <main class="sign-in" id="main">
        <div class="notice notice-error" role="alert">
          {problem.message}{' '}
          <button type="button" onClick={() => void refresh()}>
            Try again
          </button>
        </div>
      </main>
    );
  }
  if (!status) return <p class="muted loading" aria-live="polite">Loading…</p>;
  const signingIn = status.adminKeyRequired && !status.signedIn;
  if (signingIn && !kept) return <SignInPage onSignedIn={() => void refresh()} />;
  return (
    <>
      {signingIn ? <SignInPage expired onSignedIn={() => void refresh()} /> : null}
      <div hidden={signingIn}>
        <SessionContext.Provider value={{ adminKeyRequired: status.adminKeyRequired, signOut }}>{children}</SessionContext.Provider>
      </div>
    </>
  );
}
