import type { ComponentChildren } from 'preact';
import { useFocusOnOpen } from './spec-field.js';
import './config-forms.css';

/**
 * The frame of an editor opened from a row of the keys page (a key's or team's guardrails, a key's MCP policy): a
 * heading that takes focus when it opens, a Close button, and Escape to close. `canClose` lets an editor keep
 * Escape for a form open inside it (that form's own Escape cancels just the form).
 */
export function EditorPanel({ scope, class: className, title, onClose, canClose = () => true, children }: { scope: string; class: string; title: ComponentChildren; onClose(): void; canClose?(): boolean; children: ComponentChildren }) {
  const heading = useFocusOnOpen();
  return (
    <section class={`panel config-editor ${className}`} aria-labelledby={`${scope}-title`} onKeyDown={(event) => event.key === 'Escape' && canClose() && onClose()}>
      <div class="page-head">
        <h3 id={`${scope}-title`} tabIndex={-1} ref={heading}>
          {title}
        </h3>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      {children}
    </section>
  );
}
