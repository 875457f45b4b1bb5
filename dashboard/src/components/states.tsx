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
