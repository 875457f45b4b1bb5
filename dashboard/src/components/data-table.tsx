import type { ComponentChildren } from 'preact';

/**
 * A table as the dashboard's lists show one: a scrolling region named by the heading above it, a caption for screen
 * readers, column headers, and the rows given.
 */
export function DataTable({ labelledBy, caption, columns, children }: { labelledBy: string; caption: string; columns: (string | null)[]; children: ComponentChildren }) {
  return (
    <div class="table-wrap" role="region" aria-labelledby={labelledBy}>
      <table>
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {/* A null column is one the table leaves out (say, Actions on a read-only list). */}
            {columns.map((column) =>
              column === null ? null : (
                <th key={column} scope="col">
                  {column}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** An empty cell, shown as a muted dash (or the words given) so it reads as "nothing" rather than as missing. */
export function Nothing({ children = '—' }: { children?: ComponentChildren }) {
  return <span class="muted">{children}</span>;
}

/** A row's Edit button; screen readers hear which item it edits. */
export function EditButton({ what, name, onClick }: { what: string; name: string; onClick(): void }) {
  return (
    <button type="button" onClick={onClick}>
      Edit<span class="visually-hidden"> {what} {name}</span>
    </button>
  );
}
