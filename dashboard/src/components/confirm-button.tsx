import type { ComponentChildren } from 'preact';
import { useRef } from 'preact/hooks';

/**
 * A button for a destructive action that asks first, in a modal `<dialog>` (focus moves into it, Escape
 * cancels, focus returns to the button after).
 */
export function ConfirmButton(props: { label: string; title: string; children: ComponentChildren; confirmLabel: string; onConfirm(): void; class?: string }) {
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <>
      <button type="button" class={props.class ?? 'danger'} onClick={() => dialog.current?.showModal()}>
        {props.label}
      </button>
      <dialog ref={dialog} aria-label={props.title}>
        <form
          method="dialog"
          onSubmit={(event) => {
            const submitter = (event as SubmitEvent).submitter as HTMLButtonElement | null;
            if (submitter?.value === 'confirm') props.onConfirm();
          }}
        >
          <h2>{props.title}</h2>
          <div>{props.children}</div>
          <div class="actions">
            <button type="submit" value="cancel" autofocus>
              Cancel
            </button>
            <button type="submit" value="confirm" class="danger">
              {props.confirmLabel}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}
