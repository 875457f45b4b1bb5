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
});
