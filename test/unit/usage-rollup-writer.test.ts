import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import type { GatewayEvents } from '../../src/core/events.js';
import { UsageRollups } from '../../src/governance/usage-rollups.js';
import { UsageRollupWriter } from '../../src/telemetry/usage-rollup.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 27, 10, 59, 59, 500); // half a second before 11:00

let dir: string;
let root: RootDatabase;
let bus: EventBus;
let writer: UsageRollupWriter;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(T0);
  dir = mkdtempSync(join(tmpdir(), 'tollgate-rollups-'));
  root = open({ path: join(dir, 'db.lmdb'), maxDbs: 4, compression: false });
  bus = new EventBus();
  writer = new UsageRollupWriter(bus, new UsageRollups(root), pino({ level: 'silent' }));
});
afterEach(async () => {
  vi.useRealTimers();
  await writer.close();
  await root.close();
  rmSync(dir, { recursive: true, force: true });
});

function finished(keyId: string | null, provider: string, status: number, costUsd: number): void {
  const event = { requestId: 'r', keyId, teamId: null, model: 'm', upstreamModel: 'gpt-x', provider, route: null, status, costUsd, usage: { input_tokens: 10, output_tokens: 5 } };
  if (status < 400) bus.emit('request.completed', event as unknown as GatewayEvents['request.completed']);
  else bus.emit('request.failed', event as unknown as GatewayEvents['request.failed']);
}

const query = (group_by: 'key' | 'provider', interval: 'hour' | 'day') => writer.query({ group_by, interval, from: T0 - 2 * HOUR, to: T0 + 2 * HOUR });
const strip = (rows: ReturnType<typeof query>) => rows.map(({ start, group, requests, errors, spend_usd, input_tokens, output_tokens }) => ({ start, group, requests, errors, spend_usd: Math.round(spend_usd * 1e6) / 1e6, input_tokens, output_tokens }));

describe('usage rollups as requests finish', () => {
  it('answer the same before and after the deltas are written, per group and per hour across an hour boundary', async () => {
    finished('k1', 'openai', 200, 0.5);
    finished('k1', 'openai', 502, 0);
    finished('k2', 'anthropic', 200, 0.25);
    vi.setSystemTime(T0 + 1_000); // 11:00:00.500, the next hour
    finished('k1', 'anthropic', 200, 0.125);

    const pendingByKeyHour = strip(query('key', 'hour'));
    expect(pendingByKeyHour).toEqual([
      { start: '2026-11-27T10:00:00.000Z', group: 'k1', requests: 2, errors: 1, spend_usd: 0.5, input_tokens: 20, output_tokens: 10 },
      { start: '2026-11-27T10:00:00.000Z', group: 'k2', requests: 1, errors: 0, spend_usd: 0.25, input_tokens: 10, output_tokens: 5 },
      { start: '2026-11-27T11:00:00.000Z', group: 'k1', requests: 1, errors: 0, spend_usd: 0.125, input_tokens: 10, output_tokens: 5 },
    ]);
    const pendingByProviderDay = strip(query('provider', 'day'));
    expect(pendingByProviderDay).toEqual([
      { start: '2026-11-27T00:00:00.000Z', group: 'anthropic', requests: 2, errors: 0, spend_usd: 0.375, input_tokens: 20, output_tokens: 10 },
      { start: '2026-11-27T00:00:00.000Z', group: 'openai', requests: 2, errors: 1, spend_usd: 0.5, input_tokens: 20, output_tokens: 10 },
    ]);

    await writer.flush();
    expect(strip(query('key', 'hour'))).toEqual(pendingByKeyHour);
    expect(strip(query('provider', 'day'))).toEqual(pendingByProviderDay);

    // Written rows and new deltas add up.
    finished('k2', 'anthropic', 200, 0.25);
    const k2 = strip(query('key', 'hour')).filter((row) => row.group === 'k2');
    expect(k2).toEqual([
      { start: '2026-11-27T10:00:00.000Z', group: 'k2', requests: 1, errors: 0, spend_usd: 0.25, input_tokens: 10, output_tokens: 5 },
      { start: '2026-11-27T11:00:00.000Z', group: 'k2', requests: 1, errors: 0, spend_usd: 0.25, input_tokens: 10, output_tokens: 5 },
    ]);
    await writer.flush();
    expect(strip(query('key', 'hour')).filter((row) => row.group === 'k2')).toEqual(k2);
  });

  it('answer with a batch while it is being written (not only before and after)', async () => {
    finished('k1', 'openai', 200, 0.5);
    const before = strip(query('key', 'hour'));
    const flushing = writer.flush();
    // The write is under way: the batch is in neither the pending deltas nor the store yet.
    expect(strip(query('key', 'hour'))).toEqual(before);
    await flushing;
    expect(strip(query('key', 'hour'))).toEqual(before);
  });

  it('count a batch once when a query comes after it is committed but before its write has resolved', async () => {
    // lmdb-js commits on its write thread and takes a fresh read snapshot each event-loop turn: a query in between saw
    // the batch in the store and again among the batches being written, so the usage of a second of requests doubled.
    const stored = new UsageRollups(root);
    const range = { group_by: 'key' as const, interval: 'hour' as const, from: T0 - 2 * HOUR, to: T0 + 2 * HOUR };
    const total = (rows: Array<{ requests: number }>): number => rows.reduce((sum, row) => sum + row.requests, 0);
    let caught = 0;
    for (let round = 0; round < 50 && caught < 3; round++) {
      finished('k1', 'openai', 200, 0.5);
      finished('k2', 'openai', 200, 0.5);
      const expected = total(query('key', 'hour'));
      let resolved = false;
      const flushing = writer.flush().then(() => (resolved = true));
      while (!resolved) {
        if (total(stored.query(range).rows) === expected) {
          // Committed, and the write has not resolved yet.
          caught++;
          expect(total(query('key', 'hour'))).toBe(expected);
          let scanned = 0;
          await writer.scan(range, (_start, _group, counts) => (scanned += counts.requests));
          expect(scanned).toBe(expected);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      await flushing;
      expect(total(query('key', 'hour'))).toBe(expected);
    }
    expect(caught).toBeGreaterThan(0);
  });

  it('group a request by model only when that model answered (a refusal of an invented name is not a model)', async () => {
    finished('k1', 'openai', 200, 0.5);
    for (let i = 0; i < 5; i++) {
      const event = { requestId: `x${i}`, keyId: 'k1', teamId: null, model: `invented-${i}`, upstreamModel: `invented-${i}`, provider: 'openai', route: null, status: 404, costUsd: 0, usage: null };
      bus.emit('request.failed', event as unknown as GatewayEvents['request.failed']);
    }
    const groups = writer.query({ group_by: 'model', interval: 'hour', from: T0 - 2 * HOUR, to: T0 + 2 * HOUR }).map((row) => [row.group, row.requests]);
    expect(groups).toEqual([['none', 5], ['openai/gpt-x', 1]]);
  });

  it('count a request in the hour it arrived in, as the request log filters by, not the one it ended in', () => {
    vi.setSystemTime(T0 + 4_000); // 11:00:03.500
    const event = { requestId: 's', keyId: 'k9', teamId: null, model: 'm', upstreamModel: 'gpt-x', provider: 'openai', route: null, status: 200, costUsd: 2, durationMs: 4_500, usage: { input_tokens: 1, output_tokens: 1 } };
    bus.emit('request.completed', event as unknown as GatewayEvents['request.completed']);
    expect(strip(query('key', 'hour')).filter((row) => row.group === 'k9').map((row) => row.start)).toEqual(['2026-11-27T10:00:00.000Z']);
  });
  it('count a request under its own group in each of the five dimensions, by hour and by day, across models in turn', () => {
    const event = (model: string) =>
      ({ requestId: 'g', keyId: 'key-a', teamId: 'team-b', model: 'smart', upstreamModel: model, provider: 'prov-c', route: 'route-d', status: 200, costUsd: 1, usage: { input_tokens: 2, output_tokens: 3 } }) as unknown as GatewayEvents['request.completed'];
    for (const model of ['m1', 'm1', 'm2', 'm1']) bus.emit('request.completed', event(model));
    const expected = { key: [['key-a', 4]], team: [['team-b', 4]], model: [['prov-c/m1', 3], ['prov-c/m2', 1]], provider: [['prov-c', 4]], route: [['route-d', 4]] };
    for (const interval of ['hour', 'day'] as const) {
      for (const [group_by, rows] of Object.entries(expected)) {
        const got = writer.query({ group_by: group_by as keyof typeof expected, interval, from: T0 - 2 * HOUR, to: T0 + 2 * HOUR }).map((row) => [row.group, row.requests]);
        expect(got, `${group_by} by ${interval}`).toEqual(rows);
      }
    }
  });
});
