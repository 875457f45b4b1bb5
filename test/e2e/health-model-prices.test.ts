// /health names the model list's price warm-up (worked out in slices between requests after start) under `loading`
// until it is done, as it names the cache's background loads: a load balancer or a bench can wait for a gateway
// that has finished its start-up work.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { createGateway } from '../../src/gateway.js';

interface Health {
  status: string;
  loading: string[];
}

it('lists model_prices while the prices are worked out after start, and nothing once they are', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-health-prices-'));
  const gateway = await createGateway({ config: { settings: { data_dir: dataDir } }, env: {}, log: pino({ level: 'silent' }) });
  try {
    const url = await gateway.listen({ port: 0, host: '127.0.0.1' });
    // This file's process has priced nothing yet: the zero config's 1,000+ catalogue models take a few hundred ms.
    const first = (await (await fetch(`${url}/health`)).json()) as Health;
    expect(first.status).toBe('ok');
    expect(first.loading).toContain('model_prices');

    const deadline = Date.now() + 30_000;
    let health = first;
    while (health.loading.includes('model_prices') && Date.now() < deadline) {
      await new Promise((done) => setTimeout(done, 20));
      health = (await (await fetch(`${url}/health`)).json()) as Health;
    }
    expect(health.loading).toEqual([]);
  } finally {
    await gateway.close(200);
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 40_000);
