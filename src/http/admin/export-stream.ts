import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { gatewayError } from '../../core/errors.js';

export type ExportFormat = 'jsonl' | 'csv';

export function parseExportFormat(raw: string | undefined): ExportFormat {
  if (raw === undefined || raw === 'jsonl') return 'jsonl';
  if (raw === 'csv') return 'csv';
  throw gatewayError('invalid_query', `format must be 'jsonl' or 'csv', got '${raw.slice(0, 40)}'.`, { param: 'format' });
}

/** What makes a spreadsheet read a cell as a formula, first in it (OWASP's list, and NUL as ASVS adds). */
const FORMULA_START = /^[=+\-@\t\r\0]/;
/**
 * A ';' before a formula start (quotes between them or not): where the list separator is ';' (Excel in German,
 * French and most European locales) a CSV is split at every ';', quoted or not, and the cell begins right there.
 */
const FORMULA_AFTER_SEMICOLON = /;(?="*[=+\-@\t\r\0])/g;

/**
 * A CSV field (RFC 4180): quoted when it holds a comma, quote or line break. A text cell that a spreadsheet would
 * run as a formula (=, +, -, @, tab, carriage return or NUL first) gets a leading apostrophe, and so does each
 * piece of any text (JSON included) that a ';' would start as a cell, so an exported log cannot carry a formula a
 * client put in a model name, tag or message, whichever separator the spreadsheet splits on.
 */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (typeof value === 'string' && FORMULA_START.test(text)) text = `'${text}`;
  if (text.includes(';')) text = text.replace(FORMULA_AFTER_SEMICOLON, ";'");
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * Streams pages as JSON lines or CSV rows, pulling the next page only when the client has taken the last (so a
 * large export holds one page in memory and never blocks the event loop for long).
 */
export function sendExport<T>(
  reply: FastifyReply,
  format: ExportFormat,
  name: string,
  columns: ReadonlyArray<{ header: string; value: (row: T) => unknown }>,
  pages: () => Generator<T[]>,
): FastifyReply {
  async function* lines(): AsyncGenerator<string> {
    if (format === 'csv') yield `${columns.map((column) => column.header).join(',')}\r\n`;
    for (const page of pages()) {
      let chunk = '';
      for (const row of page) {
        chunk += format === 'csv' ? `${columns.map((column) => csvField(column.value(row))).join(',')}\r\n` : `${jsonLine(row)}\n`;
      }
      if (chunk) yield chunk;
      // Let requests in between pages of a long export.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  reply.header('content-type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8').header('content-disposition', `attachment; filename="${name}.${format}"`);
  // A HEAD (which fastify answers with the GET's handler) wants the headers only: the export is not read for it.
  if (reply.request.method === 'HEAD') return reply.send();
  return reply.send(Readable.from(lines()));
}

/** Line ends JSON allows raw in a string: NEL (U+0085), LINE SEPARATOR and PARAGRAPH SEPARATOR. */
const RAW_LINE_ENDS = /[\u0085\u2028\u2029]/g;

/**
 * One JSONL record. JSON.stringify escapes the control characters, but NEL, U+2028 and U+2029 it writes raw, and
 * line readers (Python's `splitlines`, some log shippers) take them for line ends and cut the record in two: they
 * are written escaped.
 */
function jsonLine(row: unknown): string {
  return JSON.stringify(row).replace(RAW_LINE_ENDS, (end) => `\\u${end.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
