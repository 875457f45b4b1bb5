import { describe, expect, it } from 'vitest';
import { toCsv } from '../../dashboard/src/csv.js';
import { csvField } from '../../src/http/admin/export-stream.js';

describe("the dashboard's CSV download (spend page)", () => {
  const hostile = ['=1+1', '+SUM(A1)', '-2+3', '@cmd', '\tx', '\0=1', 'team;=HYPERLINK("http://x")', 'a;"=1"', 'plain;text', 'a,b', 'say "hi"'];

  it('defuses every cell a spreadsheet would run as a formula, the ; split of European Excel included', () => {
    const csv = toCsv(['name'], hostile.map((name) => [name]));
    const cells = csv.split('\r\n').slice(1, -1);
    expect(cells).toEqual([
      "'=1+1",
      "'+SUM(A1)",
      "'-2+3",
      "'@cmd",
      "'\tx",
      "'\0=1",
      `"team;'=HYPERLINK(""http://x"")"`,
      `"a;'""=1"""`,
      'plain;text',
      '"a,b"',
      '"say ""hi"""',
    ]);
  });

  it('writes each text cell as the API exports write it', () => {
    for (const name of hostile) expect(toCsv(['h'], [[name]]).split('\r\n')[1]).toBe(csvField(name));
  });

  it('leaves numbers as they are (a negative spend is no formula)', () => {
    expect(toCsv(['a', 'b'], [[-1.5, 2]])).toBe('a,b\r\n-1.5,2\r\n');
  });
});
