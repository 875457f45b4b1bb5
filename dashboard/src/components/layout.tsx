import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError } from '../api/client.js';
import { useSession } from '../session.js';

export interface NavItem {
  path: string;
  label: string;
}

/** The frame of every page: a skip link, the navigation (current page marked for screen readers) and the page. */
export function Layout({ items, current, children }: { items: NavItem[]; current: string; children: ComponentChildren }) {
  const session = useSession();
  const [signingOut, setSigningOut] = useState(false);
  const [signOutError, setSignOutError] = useState<ApiError | null>(null);
  const signOut = (): void => {
    setSigningOut(true);
    setSignOutError(null);
    session.signOut().then(
      () => setSigningOut(false),
      (err: unknown) => {
        setSigningOut(false);
        setSignOutError(err instanceof ApiError ? err : new ApiError(0, String(err)));
      },
    );
  };
  return (
    <>
      <a class="skip-link" href="#main" onClick={(event) => {
        // The hash router owns location.hash, so move focus by hand instead of following the link.
        event.preventDefault();
        document.getElementById('main')?.focus();
      }}>
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">tollgate</span>
        <nav aria-label="Main">
          <ul>
            {items.map((item) => (
              <li key={item.path}>
                <a href={`#${item.path}`} aria-current={current === item.path ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {session.adminKeyRequired ? (
          <button type="button" class="sign-out" onClick={signOut} disabled={signingOut}>
            Sign out
          </button>
        ) : null}
      </header>
      <main id="main" tabIndex={-1}>
        {signOutError ? (
          <div class="notice notice-error" role="alert">
            <strong>Could not sign out</strong>
            {signOutError.status > 0 ? ` (${signOutError.status})` : ''}: {signOutError.message} You are still signed in; try again.
          </div>
        ) : null}
        {children}
      </main>
    </>
  );
}
