import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import type { GatewayEvents } from '../../src/core/events.js';
import { GovernanceStore } from '../../src/governance/governance-store.js';
import { RequestLogWriter } from '../../src/telemetry/request-log.js';

let dir: string;
let root: RootDatabase;
let bus: EventBus;
let governance: GovernanceStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-request-log-'));
  // As the gateway opens it by default (no fsync: entries commit together within the store's window).
  root = open({ path: join(dir, 'db.lmdb'), maxDbs: 16, compression: false, noSync: true });
  bus = new EventBus();
  governance = new GovernanceStore(root, bus);
});
afterEach(async () => {
  vi.restoreAllMocks();
  await root.close();
  rmSync(dir, { recursive: true, force: true });
});

function completed(requestId: string): GatewayEvents['request.completed'] {
  return {
    requestId, dialect: 'openai', path: '/v1/chat/completions', operation: 'chat', model: 'openai/gpt-4o-mini', route: null, provider: 'openai',
    upstreamModel: 'gpt-4o-mini', keyId: 'key_1', teamId: null, stream: false, status: 200, durationMs: 12.3, attempts: 1, cache: null,
    guardrails: null, fallback: false, upstreamMs: 10, firstTokenMs: 11, finishReasons: ['stop'], user: null, metadata: null,
    usage: { input_tokens: 3, output_tokens: 4, cache_read_tokens: 0, cache_write_tokens: 0 }, costUsd: 0.001, priced: true, estimated: false,
    bodies: null, cancelled: false,
  };
}

describe('the request-log subscriber', () => {
  it('writes an entry per finished request with its attempts, readable once flush resolves', async () => {
    const writer = new RequestLogWriter(bus, governance, pino({ level: 'silent' }));
    const ids = ['000001764400000-000001', '000001764400000-000002'];
    for (const requestId of ids) {
      bus.emit('provider.attempted', { requestId, provider: 'openai', model: 'gpt-4o-mini', attempt: 1, ok: true, status: 200, durationMs: 9.6, errorCode: null });
      bus.emit('request.completed', completed(requestId));
    }
    expect(governance.requestLogEntry(ids[0] as string)).toBeNull();
    await writer.flush();
    for (const id of ids) {
      const entry = governance.requestLogEntry(id);
      expect(entry).toMatchObject({ id, key_id: 'key_1', status: 200, prompt_tokens: 3, completion_tokens: 4, duration_ms: 12 });
      expect(entry?.attempts).toEqual([{ provider: 'openai', model: 'gpt-4o-mini', status: 200, ok: true, duration_ms: 10, error_code: null }]);
    }
    writer.stop();
  });

  it('keeps the fields in the order entries always had, the optional ones where they belong', async () => {
    const writer = new RequestLogWriter(bus, governance, pino({ level: 'silent' }));
    const requestId = '000001764400000-000009';
    const failed: GatewayEvents['request.failed'] = {
      ...completed(requestId), route: 'smart', status: 502, cache: 'miss', guardrails: ['input:cards:redacted'],
      bodies: { request: '{"a":1}', response: '' }, type: 'upstream_error', code: 'upstream_failed', message: 'the upstream broke',
    };
    bus.emit('request.failed', failed);
    bus.emit('request.completed', completed('000001764400000-000010'));
    await writer.flush();
    expect(Object.keys(governance.requestLogEntry(requestId) ?? {})).toEqual([
      'id', 'at', 'key_id', 'team_id', 'model', 'provider', 'upstream_model', 'status', 'stream', 'cancelled', 'prompt_tokens',
      'completion_tokens', 'cost_usd', 'priced', 'duration_ms', 'route', 'error_type', 'error_code', 'error_message', 'dialect', 'path',
      'operation', 'attempts', 'fallback', 'upstream_ms', 'first_token_ms', 'overhead_ms', 'cached_tokens', 'cache_write_tokens',
      'reasoning_tokens', 'estimated', 'cache', 'guardrails', 'user', 'metadata', 'request_body', 'response_body', 'write_seq',
    ]);
    expect(governance.requestLogEntry(requestId)).toMatchObject({ route: 'smart', error_message: 'the upstream broke', guardrails: ['input:cards:redacted'], overhead_ms: 2.3 });
    expect(Object.keys(governance.requestLogEntry('000001764400000-000010') ?? {})).not.toContain('route');
    expect(governance.requestLogEntry('000001764400000-000010')?.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    writer.stop();
  });

  it('logs a write that fails with its request id, and the entries committed with it are kept', async () => {
    const log = pino({ level: 'silent' });
    const error = vi.spyOn(log, 'error');
    const writer = new RequestLogWriter(bus, governance, log);
    const put = GovernanceStore.prototype as unknown as { writeLogEntry: (entry: { id?: string }, id: string) => void };
    const real = put.writeLogEntry;
    vi.spyOn(put, 'writeLogEntry').mockImplementation(function (this: unknown, entry, id) {
      if (id.endsWith('-000002')) throw new Error('disk full');
      real.call(this, entry, id);
    });
    for (const n of [1, 2, 3]) bus.emit('request.completed', completed(`000001764400000-00000${n}`));
    await writer.flush();
    expect(governance.requestLogEntry('000001764400000-000001')).not.toBeNull();
    expect(governance.requestLogEntry('000001764400000-000002')).toBeNull();
    expect(governance.requestLogEntry('000001764400000-000003')).not.toBeNull();
    expect(error).toHaveBeenCalledTimes(1);
    expect(error.mock.calls[0]?.[0]).toMatchObject({ requestId: '000001764400000-000002' });
    writer.stop();
  });
});
