import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, gatewayError, isErrorCode } from '../../src/core/errors.js';

const README = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');

/** The rows of the README's `## Errors` table: status column and the codes (in backticks) of the code column. */
function errorTable(): Array<{ status: number | null; codes: string[]; line: string }> {
  const section = README.split(/^## Errors$/m)[1]?.split(/^## /m)[0] ?? '';
  const rows: Array<{ status: number | null; codes: string[]; line: string }> = [];
  for (const line of section.split('\n')) {
    if (!line.startsWith('|') || /^\|\s*-/.test(line) || /^\|\s*status\s*\|/.test(line)) continue;
    const cells = line.split('|').map((cell) => cell.trim());
    const status = /^\d{3}$/.test(cells[1] ?? '') ? Number(cells[1]) : null;
    const codes = [...(cells[3] ?? '').matchAll(/`([a-z_]+)`/g)].map((match) => match[1] as string);
    rows.push({ status, codes, line });
  }
  return rows;
}

describe('the error catalogue', () => {
  const rows = errorTable();

  it('the README has an error table', () => {
    expect(rows.length).toBeGreaterThan(10);
  });

  it('documents every code in the README error table, with its status', () => {
    for (const [code, spec] of Object.entries(ERROR_CATALOGUE)) {
      const row = rows.find((candidate) => candidate.codes.includes(code));
      expect(row, `README's error table has no row for \`${code}\``).toBeDefined();
      expect(row?.status, `README's row for \`${code}\` says ${row?.status}, the catalogue ${spec.status}: ${row?.line}`).toBe(spec.status);
    }
  });

  it('names no tollgate code in the README that the catalogue lacks', () => {
    for (const row of rows) for (const code of row.codes) expect(isErrorCode(code), `README names \`${code}\`, which the catalogue lacks: ${row.line}`).toBe(true);
  });

  it('builds each error from its entry: status, type, retryability', () => {
    const error = gatewayError('invalid_upstream_response', 'openai: upstream sent garbage', { param: null });
    expect(error).toMatchObject({ status: 502, type: 'upstream_error', code: 'invalid_upstream_response', retryable: true, message: 'openai: upstream sent garbage' });
    expect(gatewayError('invalid_value', 'bad', { param: 'n' })).toMatchObject({ status: 400, retryable: false, param: 'n' });
  });

  it('lets only a code that declares other types carry one', () => {
    expect(gatewayError('rate_limit_exceeded', 'slow', { type: 'tokens' }).type).toBe('tokens');
    expect(() => gatewayError('invalid_value', 'bad', { type: 'tokens' })).toThrow(/cannot carry type/);
  });

  it('keeps one status per code (a code that needs two statuses is two codes)', () => {
    const statuses = new Map<string, number>();
    for (const [code, spec] of Object.entries(ERROR_CATALOGUE)) statuses.set(code, spec.status);
    expect(statuses.size).toBe(Object.keys(ERROR_CATALOGUE).length);
  });
});
