// Provider keys set through the API are sealed with TOLLGATE_SECRET_KEY or the data directory's secret.key. A data
// directory moved without that key (or started with another one) must stop with a message naming the key that was
// actually used and what to restore, never one that blames a variable the operator did not set.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin.js';
import { startGateway } from '../helpers/gateway.js';

let dataDir: string;

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-secret-key-'));
});
afterEach(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

/** Starts a gateway on the data directory, stores one provider key through the API, and stops it. */
async function sealOneKey(env: Record<string, string>): Promise<void> {
  const tg = await startGateway({}, env, { dataDir });
  try {
    const stored = await new AdminClient(tg.url).put('/api/providers/sealed', { type: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-sealed-provider-key-0001' });
    expect(stored.status).toBe(201);
  } finally {
    await tg.stop();
  }
}

async function startFailure(env: Record<string, string>): Promise<string> {
  const started = await startGateway({}, env, { dataDir }).then(
    async (tg) => {
      await tg.stop();
      return null;
    },
    (err: unknown) => (err as Error).message,
  );
  expect(started, 'the gateway started with keys it cannot decrypt').not.toBeNull();
  return started as string;
}

describe('stored provider keys and the key that sealed them', () => {
  it('a data directory copied without its secret.key names secret.key, not TOLLGATE_SECRET_KEY', async () => {
    await sealOneKey({});
    rmSync(join(dataDir, 'secret.key'));
    const message = await startFailure({});
    expect(message).toContain(join(dataDir, 'secret.key'));
    expect(message).toMatch(/missing/);
    expect(message).not.toMatch(/TOLLGATE_SECRET_KEY differs/);
    // The key generated meanwhile is now the data directory's secret.key: the next start still names it.
    const again = await startFailure({});
    expect(again).toContain(join(dataDir, 'secret.key'));
  });

  it('a changed TOLLGATE_SECRET_KEY is named as such', async () => {
    await sealOneKey({ TOLLGATE_SECRET_KEY: 'first passphrase' });
    const message = await startFailure({ TOLLGATE_SECRET_KEY: 'second passphrase' });
    expect(message).toMatch(/TOLLGATE_SECRET_KEY/);
  });

  it('keys sealed with TOLLGATE_SECRET_KEY, started without it, name the variable to set', async () => {
    await sealOneKey({ TOLLGATE_SECRET_KEY: 'first passphrase' });
    const message = await startFailure({});
    expect(message).toContain(join(dataDir, 'secret.key'));
    expect(message).toMatch(/set TOLLGATE_SECRET_KEY/);
    expect(message).not.toMatch(/TOLLGATE_SECRET_KEY differs/);
  });
});
