import { describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway } from '../helpers/gateway.js';

describe('the audit log', () => {
  it('records who created, changed, rotated and deleted virtual keys and teams, without secrets or counters', async () => {
    const tg = await startGateway({});
    try {
      const team = (await jsonRequest(tg.url, 'POST', '/api/teams', { name: 'platform', budget: 50 })).body as { id: string };
      const created = (await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'ci', team: team.id, budget: 10 })).body as { id: string; key: string };
      expect((await jsonRequest(tg.url, 'PATCH', `/api/keys/${created.id}`, { disabled: true })).status).toBe(200);
      const rotated = (await jsonRequest(tg.url, 'POST', `/api/keys/${created.id}/rotate`)).body as { key: string };
      expect((await jsonRequest(tg.url, 'PATCH', `/api/teams/${team.id}`, { budget: 20 })).status).toBe(200);
      expect((await jsonRequest(tg.url, 'DELETE', `/api/keys/${created.id}`)).status).toBe(204);
      expect((await jsonRequest(tg.url, 'DELETE', `/api/teams/${team.id}`)).status).toBe(204);

      const entries = ((await jsonRequest(tg.url, 'GET', '/api/audit')).body as { data: Array<{ action: string; target: string; actor: { kind: string }; before: any; after: any }> }).data;
      expect(entries.map((entry) => entry.action).reverse()).toEqual(['team.created', 'key.created', 'key.updated', 'key.rotated', 'team.updated', 'key.deleted', 'team.deleted']);
      expect(entries.every((entry) => entry.actor.kind === 'loopback')).toBe(true);
      const updated = entries.find((entry) => entry.action === 'key.updated');
      expect(updated).toMatchObject({ target: `keys.${created.id}`, before: { disabled: false, name: 'ci', budget: 10 }, after: { disabled: true } });
      expect(entries.find((entry) => entry.action === 'team.updated')).toMatchObject({ before: { budget: 50 }, after: { budget: 20 } });
      const all = JSON.stringify(entries) + (await (await fetch(`${tg.url}/api/audit/export?format=csv`)).text());
      for (const secret of [created.key, rotated.key]) expect(all).not.toContain(secret.slice(8));
      expect(all).not.toContain('key_hash');
      expect(updated?.after).not.toHaveProperty('spend');
    } finally {
      await tg.stop();
    }
  });

  it('audits each of concurrent changes to one key or team with the record as it was just before that change and as that change left it', async () => {
    const tg = await startGateway({});
    try {
      const team = (await jsonRequest(tg.url, 'POST', '/api/teams', { name: 'platform' })).body as { id: string };
      const key = (await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'ci' })).body as { id: string };
      // Sent together: each handler reads the record before the other's write has committed.
      const keyChanges = [{ budget: 10 }, { rate_limit: 5 }, { name: 'renamed' }, { disabled: true }];
      const teamChanges = [{ budget: 20 }, { tokens_per_minute: 1000 }, { name: 'platform-2' }];
      const answers = await Promise.all([
        ...keyChanges.map((change) => jsonRequest(tg.url, 'PATCH', `/api/keys/${key.id}`, change)),
        ...teamChanges.map((change) => jsonRequest(tg.url, 'PATCH', `/api/teams/${team.id}`, change)),
      ]);
      expect(answers.map((answer) => answer.status)).toEqual(Array(7).fill(200));

      const entries = ((await jsonRequest(tg.url, 'GET', '/api/audit')).body as { data: Array<{ action: string; before: Record<string, unknown>; after: Record<string, unknown> }> }).data.reverse();
      /** The fields an entry says its change altered. */
      const altered = (entry: { before: Record<string, unknown>; after: Record<string, unknown> }): string[] =>
        Object.keys(entry.after).filter((field) => JSON.stringify(entry.before[field]) !== JSON.stringify(entry.after[field]));
      for (const [action, changes] of [['key.updated', keyChanges], ['team.updated', teamChanges]] as const) {
        const updates = entries.filter((entry) => entry.action === action);
        expect(updates.map(altered).sort()).toEqual(changes.map((change) => Object.keys(change)).sort());
        // One after another: each change starts from what the one before it left.
        for (let i = 1; i < updates.length; i++) expect(updates[i]?.before).toEqual(updates[i - 1]?.after);
      }
    } finally {
      await tg.stop();
    }
  });
});
