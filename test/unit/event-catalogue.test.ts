import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EVENT_FIELDS, REQUEST_SUMMARY_FIELDS } from '../../src/core/event-catalogue.js';

/** The README's event catalogue table: event name -> the fields it lists (RequestSummary expanded). */
function readmeCatalogue(): Map<string, string[]> {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('### Event catalogue'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| event |')));
  const rows = new Map<string, string[]>();
  for (const line of table.split('\n')) {
    const match = /^\| `?([A-Za-z_.]+)`? \| (.+) \|$/.exec(line);
    if (!match || match[1] === 'event') continue;
    rows.set(match[1] as string, (match[2] as string).split(', ').map((field) => field.replace(/`/g, '').trim()));
  }
  const summary = rows.get('RequestSummary') ?? [];
  rows.delete('RequestSummary');
  for (const [name, fields] of rows) rows.set(name, fields.flatMap((field) => (field === 'RequestSummary' ? summary : [field])));
  return rows;
}

describe("the README's event catalogue", () => {
  const documented = readmeCatalogue();

  it('names every event the bus carries, and no other', () => {
    expect([...documented.keys()].sort()).toEqual(Object.keys(EVENT_FIELDS).sort());
  });

  it("lists each event's payload fields exactly (the field lists are checked against the types at compile time)", () => {
    for (const [name, fields] of Object.entries(EVENT_FIELDS)) expect([name, [...(documented.get(name) ?? [])].sort()]).toEqual([name, [...fields].sort()]);
  });

  it('documents the request summary of the terminal events', () => {
    expect(documented.get('request.completed')).toEqual([...REQUEST_SUMMARY_FIELDS, 'cancelled']);
  });
});
