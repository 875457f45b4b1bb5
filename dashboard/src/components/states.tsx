import type { ComponentChildren } from 'preact';

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/**
 * A list as it loads: "Loading <what>…" until its data is there, then the list, or what an empty list means.
 * (A failed load shows nothing here: the page's error notice says why.)
 */
export function ListState({ ready, loading, what, count, empty, children }: { ready: boolean; loading: boolean; what: string; count: number; empty: ComponentChildren; children: ComponentChildren }) {
  if (!ready) return loading ? <Loading what={what} /> : null;
  return count ? <>{children}</> : <Empty>{empty}</Empty>;
}
