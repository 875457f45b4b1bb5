import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/**
 * A filter that few audit entries match (a config change among a long history of key edits) must not read the whole
 * audit log in one go while requests wait: a page reads a bounded number of entries and answers with a cursor, as the
 * request log does, and following the cursors (or exporting) still finds every match.
 */

let tg: RunningGateway;
let api: AdminClient;
const HISTORY = 25_000;
let action: string;

beforeAll(async () => {
  tg = await startGateway({});
  api = new AdminClient(tg.url);
  expect((await api.patch('/api/config', { settings: { log_retention_days: 60 } })).status).toBe(200);
  expect((await api.patch('/api/config', { settings: { log_retention_days: 90 } })).status).toBe(200);
  action = (await api.get('/api/audit?limit=1')).body.data[0].action;
  // A long history after them: key edits, as an integration that manages a key per customer leaves.
  const writes = [];
  for (let i = 0; i < HISTORY; i++) writes.push(tg.gateway.store.audit.append({ actor: { kind: 'admin-key', id: 'ops' }, action: 'key.updated', target: `keys.vk_${i}`, before: { budget: 1 }, after: { budget: 2 }, version: 1 } as never));
  await Promise.all(writes);
});
afterAll(async () => {
  await tg.stop();
});

describe('GET /api/audit with a rare filter', () => {
  it('answers page by page with a cursor, each page reading a bounded part of the log, and the pages hold every match', async () => {
    const found: string[] = [];
    let before: string | null = null;
    let pages = 0;
    do {
      const page = await api.get(`/api/audit?limit=50&action=${action}${before ? `&before=${before}` : ''}`);
      expect(page.status).toBe(200);
      found.push(...page.body.data.map((entry: { id: string; action: string }) => entry.action));
      before = page.body.next_before;
      pages++;
    } while (before !== null && pages < 100);
    expect(found).toEqual([action, action]);
    // 25,000 entries read 10,000 at a time: the matches come on the third page, after two that only carry the cursor.
    expect(pages).toBe(3);
    const exported = (await (await fetch(`${tg.url}/api/audit/export?format=jsonl&action=${action}`)).text()).trim().split('\n');
    expect(exported.map((line) => JSON.parse(line).action)).toEqual([action, action]);
  });
});
