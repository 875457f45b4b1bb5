import type { ComponentChildren } from 'preact';
import { useSession } from '../session.js';

export interface NavItem {
  path: string;
  label: string;
}

/** The frame of every page: a skip link, the navigation (current page marked for screen readers) and the page. */
export function Layout({ items, current, children }: { items: NavItem[]; current: string; children: ComponentChildren }) {
  const session = useSession();
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
          <button type="button" class="sign-out" onClick={() => void session.signOut()}>
            Sign out
          </button>
        ) : null}
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}
