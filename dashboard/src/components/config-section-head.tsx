import type { ComponentChildren } from 'preact';
import { ConfirmButton } from './confirm-button.js';

/** Where a whole config section comes from: set through the API (or this dashboard), the config file, or neither. */
export type SectionSource = 'api' | 'file' | 'none';

const SOURCE_TEXT: Record<string, string> = { api: 'from the API', file: 'from the config file', none: 'none configured' };

/**
 * The head of a page that shows one config section (alerts, guardrails, MCP): its title, a badge saying where the
 * section comes from, and, when the API set it, "Revert to file", which deletes the API's section so the file's
 * applies again.
 */
export function ConfigSectionHead({
  id,
  title,
  source,
  badge,
  onRevert,
  revertTitle,
  children,
}: {
  id: string;
  title: string;
  /** Unknown until the section is loaded: no badge then. */
  source: string | undefined;
  badge: {
    /** What the section holds, as the badge starts: "Alerts from the API". */
    noun: string;
    testId: string;
    /** The badge's tooltip for the file's section and for none. */
    file: string;
    none: string;
  };
  onRevert(): void;
  revertTitle: string;
  /** What reverting deletes, in the confirmation. */
  children: ComponentChildren;
}) {
  return (
    <div class="page-head">
      <h1 id={id}>{title}</h1>
      <div class="actions">
        {source ? (
          <span class={`badge source-${source}`} data-testid={badge.testId} title={source === 'api' ? 'Set through the API or this page: "Revert to file" goes back to the file' : source === 'file' ? badge.file : badge.none}>
            {badge.noun} {SOURCE_TEXT[source] ?? source}
          </span>
        ) : null}
        {source === 'api' ? (
          <ConfirmButton label="Revert to file" title={revertTitle} confirmLabel="Revert to file" onConfirm={onRevert}>
            {children}
          </ConfirmButton>
        ) : null}
      </div>
    </div>
  );
}
