import type { ComponentChildren } from 'preact';

/**
 * A list with an "Add" button by its heading and a form that opens where the user clicked: a new item's above the
 * list, by the Add button; an edit's below it, after the row's Edit button. `add` is null where the list cannot be
 * changed here.
 */
export function EditableList({ heading, add, form, formIsNew, children }: { heading: ComponentChildren; add: { label: ComponentChildren; onClick(): void; disabled: boolean } | null; form: ComponentChildren | null; formIsNew: boolean; children: ComponentChildren }) {
  return (
    <>
      <div class="page-head">
        {heading}
        {add ? (
          <button type="button" onClick={add.onClick} disabled={add.disabled}>
            {add.label}
          </button>
        ) : null}
      </div>
      {form && formIsNew ? form : null}
      {children}
      {form && !formIsNew ? form : null}
    </>
  );
}
