/** What makes a spreadsheet read a cell as a formula, first in it (OWASP's list, and NUL as ASVS adds). */
const FORMULA_START = /^[=+\-@\t\r\0]/;
/**
 * A ';' before a formula start (quotes between them or not): where the list separator is ';' (Excel in German,
 * French and most European locales) a CSV is split at every ';', quoted or not, and the cell begins right there.
 */
const FORMULA_AFTER_SEMICOLON = /;(?="*[=+\-@\t\r\0])/g;

/**
 * Rows to CSV (RFC 4180 quoting), defused as the API's own CSV exports are (src/http/admin/export-stream.ts): a
 * text cell a spreadsheet would run as a formula gets a leading apostrophe, and so does each piece a ';' would
 * start as a cell, since group names come from users (key, team and model names).
 */
export function toCsv(header: string[], rows: (string | number)[][]): string {
  const cell = (value: string | number): string => {
    let text = String(value);
    if (typeof value === 'string') {
      if (FORMULA_START.test(text)) text = `'${text}`;
      if (text.includes(';')) text = text.replace(FORMULA_AFTER_SEMICOLON, ";'");
    }
    return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return [header, ...rows].map((row) => row.map(cell).join(',')).join('\r\n') + '\r\n';
}
