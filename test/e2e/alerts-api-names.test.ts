import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// Alert channel names that are also the names of every JavaScript object's members (toString, constructor,
// __proto__): /api/alerts/channels/:name must treat them as the channels they are not, not as Object's own.

let tg: RunningGateway;
let admin: AdminClient;

beforeAll(async () => {
  tg = await startGateway({
    alerts: { channels: { ops: { type: 'webhook', url: 'https://hooks.example.com/ops' } }, rules: [{ name: 'breaker', kind: 'breaker_opened' }] },
  });
  admin = new AdminClient(tg.url);
});
afterAll(async () => {
  await tg?.stop();
});

describe('/api/alerts/channels/:name with the name of an Object member', () => {
  it('answers 404 to a DELETE of a channel that does not exist, and changes nothing', async () => {
    const version = tg.gateway.configService.current().version;
    for (const name of ['toString', 'constructor', 'hasOwnProperty']) {
      const deleted = await admin.delete(`/api/alerts/channels/${name}`);
      expect(deleted.status, name).toBe(404);
      expect(deleted.body).toMatchObject({ error: { code: 'alert_channel_not_found', param: 'name' } });
    }
    // Nothing written: the section is still the file's (a write would have copied it into the API layer, where it
    // no longer follows the file), and no config version or audit entry was made.
    expect((await admin.get('/api/alerts')).body).toMatchObject({ source: 'file', channels: [{ name: 'ops' }] });
    expect(tg.gateway.configService.current().version).toBe(version);
    const audit = await admin.get('/api/audit?limit=20');
    expect(audit.body.data.filter((entry: { action: string }) => entry.action.startsWith('alert_'))).toEqual([]);
  });

  it('refuses to create a channel named __proto__ (400), instead of answering 200 with nothing stored', async () => {
    const put = await admin.put('/api/alerts/channels/__proto__', { type: 'webhook', url: 'https://hooks.example.com/proto' });
    expect(put.status).toBe(400);
    expect(put.body).toMatchObject({ error: { code: 'invalid_config', param: 'alerts.channels.__proto__' } });
    expect((await admin.get('/api/alerts')).body).toMatchObject({ source: 'file', channels: [{ name: 'ops' }] });
  });
});
