import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/**
 * `POST /api/config/validate`: a dry run of `PUT /api/config` with the same body. It answers what the PUT would
 * (200 with the warnings, or the 400 naming the field) and applies nothing: no new version, no audit entry.
 */

let tg: RunningGateway;
let api: AdminClient;

beforeAll(async () => {
  tg = await startGateway({
    providers: { openai: { base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-validate-secret-0001' } },
    routes: { chat: { targets: [{ model: 'openai/m', weight: 1 }] } },
  });
  api = new AdminClient(tg.url);
});
afterAll(async () => {
  await tg.stop();
});

async function state(): Promise<{ version: number; audit: number; view: unknown }> {
  const view = await api.get('/api/config');
  const audit = await api.get('/api/audit?limit=500');
  return { version: view.body.version as number, audit: (audit.body.data as unknown[]).length, view: view.body };
}

describe('POST /api/config/validate', () => {
  it('answers 200 for a valid changed view, with its warnings, and changes nothing', async () => {
    const before = await state();
    const view = structuredClone(before.view) as { settings: Record<string, unknown>; routes: Array<{ name: string; targets: Array<{ weight: number }>; fallbacks?: string[] }> };
    view.settings.log_retention_days = 7;
    const chat = view.routes.find((route) => route.name === 'chat')!;
    chat.targets[0]!.weight = 5;
    // A fallback to a provider with no key is valid, but warned about.
    chat.fallbacks = ['mistral/mistral-small-latest'];
    const answer = await api.post('/api/config/validate', view);
    expect(answer.status).toBe(200);
    expect(answer.body.valid).toBe(true);
    expect(answer.body.warnings).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.stringContaining('routes.chat.fallbacks') })]));

    const after = await state();
    expect(after.version).toBe(before.version);
    expect(after.audit).toBe(before.audit);
    expect(after.view).toEqual(before.view);
  });

  it('answers 200 for a valid API-layer document (maps, not lists), and changes nothing', async () => {
    const before = await state();
    const answer = await api.post('/api/config/validate', { settings: { log_retention_days: 3 }, routes: { extra: { targets: [{ model: 'openai/m' }] } } });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ valid: true, warnings: [] });
    const after = await state();
    expect(after.version).toBe(before.version);
    expect(after.audit).toBe(before.audit);
    expect((await api.get('/api/routes/extra')).status).toBe(404);
  });

  it('answers the 400 PUT gives, naming the field, and changes nothing', async () => {
    const before = await state();
    const view = structuredClone(before.view) as { settings: Record<string, unknown> };
    view.settings.log_retention_days = 'soon';
    const dry = await api.post('/api/config/validate', view);
    expect(dry.status).toBe(400);
    expect(dry.body.error.param).toBe('settings.log_retention_days');
    expect(dry.body.error.message).toContain('log_retention_days');

    // The PUT refuses the same body with the same error.
    const put = await api.put('/api/config', view);
    expect(put.status).toBe(400);
    expect(put.body.error).toEqual(dry.body.error);

    // A start-only setting and a reference are refused as PUT refuses them.
    const port = await api.post('/api/config/validate', { settings: { port: 9999 } });
    expect(port.status).toBe(400);
    expect(port.body.error.param).toBe('settings.port');
    const reference = await api.post('/api/config/validate', { providers: { openai: { api_key: 'env:HOME' } } });
    expect(reference.status).toBe(400);
    expect(reference.body.error.param).toBe('providers.openai.api_key');

    // No body is refused like PUT's.
    expect((await api.request('POST', '/api/config/validate')).status).toBe(400);

    const after = await state();
    expect(after.version).toBe(before.version);
    expect(after.audit).toBe(before.audit);
    // Secrets stay masked in every answer.
    expect(api.seen.some((response) => response.text.includes('sk-validate-secret-0001'))).toBe(false);
  });
});
