// The request log is trimmed to settings.log_retention_days by a sweep the gateway runs at start (and every
// few minutes): entries past the retention go, recent ones stay, and spend totals are untouched.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { GovernanceStore } from '../../src/governance/governance-store.js';
import { Store } from '../../src/store/store.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

const DAY = 24 * 60 * 60_000;
let dataDir: string;
let tg: RunningGateway | null = null;
let keyId = '';

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-retention-e2e-'));
  // A gateway that ran for 20 days: one charged request a day, 20 down to 1 days ago.
  const store = await Store.open(dataDir, 'test');
  let at = Date.now() - 20 * DAY;
  const governance = new GovernanceStore(store.root, new EventBus(), () => new Date(at));
  const { record } = await governance.createKey({ name: 'old-timer', budget: 1000, budget_period: 'total' });
  keyId = record.id;
  for (let age = 20; age >= 1; age--) {
    at = Date.now() - age * DAY + 60_000;
    await governance.recordSpend(keyId, null, 0.25);
    await governance.recordRequest({
      at: new Date(at).toISOString(), key_id: keyId, team_id: null, model: 'openai/gpt-4o-mini', provider: 'openai', upstream_model: 'gpt-4o-mini',
      status: 200, stream: false, cancelled: false, prompt_tokens: 10, completion_tokens: 5, cost_usd: 0.25, priced: true, duration_ms: 5,
    });
  }
  await store.close();
});
afterAll(async () => {
  await tg?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('request-log retention', () => {
  it('the sweep at start deletes entries older than log_retention_days, keeping spend totals', async () => {
    tg = await startGateway({ settings: { log_retention_days: 7 } }, {}, { dataDir });
    const governance = tg.gateway.governance;
    const deadline = Date.now() + 10_000;
    while (governance.requestLog({ limit: 100 }).length > 7 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const ages = governance.requestLog({ limit: 100 }).map((entry) => Math.round((Date.now() - Date.parse(entry.at)) / DAY));
    expect(ages).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(governance.requestLog({ key_id: keyId, limit: 100 })).toHaveLength(7);
    const key = governance.getKey(keyId);
    expect(key.total_requests).toBe(20);
    expect(key.total_spend).toBe(5);
    expect(key.spend).toBe(5);
  });
});
