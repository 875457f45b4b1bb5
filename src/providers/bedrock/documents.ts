import type { GatewayError } from '../../core/errors.js';
import { gatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { quoteInput } from '../../core/quote-input.js';

/**
 * Canonical `file` parts as Converse document blocks, by the rules AWS documents for DocumentBlock and Message
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_DocumentBlock.html): inline bytes only, one
 * of nine formats, a name of alphanumerics, single whitespace, hyphens, parentheses and square brackets (1 to 200
 * characters) that no other document of the request has, at most five documents a request, and a text block in
 * every message that holds one.
 */

export type DocumentFormat = 'pdf' | 'csv' | 'doc' | 'docx' | 'xls' | 'xlsx' | 'html' | 'txt' | 'md';

export interface DocumentBlock {
  document: { format: DocumentFormat; name: string; source: { bytes: string } };
}

const FORMATS: Record<string, DocumentFormat> = {
  'application/pdf': 'pdf',
  'text/csv': 'csv',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'text/html': 'html',
  'text/plain': 'txt',
  'text/markdown': 'md',
  'text/x-markdown': 'md',
};

const TAKES = 'Bedrock takes documents as inline base64 file_data (a data: URL) of type pdf, csv, doc, docx, xls, xlsx, html, txt, md';
const MAX_DOCUMENTS = 5;
const MAX_NAME = 200;
const DATA_URL = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s;

function bad(message: string, param: string): GatewayError {
  return gatewayError('unsupported_for_provider', `bedrock: ${message}`, { param });
}

/**
 * A file name as a DocumentBlock name: the extension dropped (the format carries it), every run of other characters
 * a hyphen, whitespace single; empty when nothing usable is left (a name in another script).
 */
function sanitisedName(filename: unknown): string {
  if (typeof filename !== 'string') return '';
  const base = filename.split(/[\\/]/).pop() ?? '';
  const stem = base.replace(/\.[A-Za-z0-9]{1,5}$/, '');
  return stem
    .replace(/[^A-Za-z0-9\s\-()[\]]+/g, '-')
    .replace(/\s+/g, ' ')
    .replace(/^[\s-]+|[\s-]+$/g, '')
    .slice(0, MAX_NAME - 10)
    .trim();
}

/** Turns one request's file parts into document blocks, keeping names unique and the count within Bedrock's limit. */
export class DocumentTranslator {
  private readonly names = new Set<string>();

  block(part: Record<string, unknown>, where: string): DocumentBlock {
    const file = isRecord(part.file) ? part.file : {};
    const match = typeof file.file_data === 'string' ? DATA_URL.exec(file.file_data) : null;
    if (!match) {
      // A file id or URL would need the gateway to fetch or hold the file; Converse takes bytes only.
      throw bad(`the file part has no inline file_data (file ids and URLs are not supported); ${TAKES}.`, where);
    }
    const mediaType = (match[1] as string).toLowerCase();
    // Own keys only: a client's 'constructor' media type must find no format.
    const format = Object.hasOwn(FORMATS, mediaType) ? FORMATS[mediaType] : undefined;
    if (!format) throw bad(`file type ${quoteInput(mediaType)} is not supported; ${TAKES}.`, where);
    if (this.names.size >= MAX_DOCUMENTS) throw bad(`a request may hold at most ${MAX_DOCUMENTS} documents.`, where);
    const name = this.unique(sanitisedName(file.filename) || `document-${this.names.size + 1}`);
    return { document: { format, name, source: { bytes: (match[2] as string).replace(/\s+/g, '') } } };
  }

  /** Converse refuses two documents of the same name in a request (names compared regardless of case). */
  private unique(name: string): string {
    let candidate = name;
    for (let n = 2; this.names.has(candidate.toLowerCase()); n++) candidate = `${name} (${n})`;
    this.names.add(candidate.toLowerCase());
    return candidate;
  }
}

/**
 * The text block Converse requires beside documents, for a message that has none (a PDF a tool answered with, a
 * document sent alone): it names the documents, so the model is told no more than what the message holds.
 */
export function documentsText(blocks: ReadonlyArray<object>): { text: string } | null {
  const names = blocks.flatMap((block) => ('document' in block ? [(block as DocumentBlock).document.name] : []));
  if (names.length === 0 || blocks.some((block) => 'text' in block)) return null;
  return { text: names.length === 1 ? `Attached document: ${names[0]}` : `Attached documents: ${names.join(', ')}` };
}
