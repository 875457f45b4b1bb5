/**
 * Rows to CSV (RFC 4180 quoting). Cells a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR)
 * get a leading apostrophe, as the API's own CSV exports do: group names come from users (key and model names).
 */
export function toCsv(header: string[], rows: (string | number)[][]): string {
  const cell = (value: string | number): string => {
    let text = String(value);
    if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
    return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return [header, ...rows].map((row) => row.map(cell).join(',')).join('\r\n') + '\r\n';
}

/** Offers `text` as a file download. */
export function download(filename: string, text: string, type = 'text/csv'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1_000);
}
