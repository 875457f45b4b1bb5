import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load-file.js';
import { AdminClient } from '../helpers/admin.js';
import { startGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A compose or shell placeholder nothing expanded (`${APIM_KEY}`) is refused in every credential field that takes
 * `env:`/`file:` references, as it was already for provider keys: a provider's header values, an Entra client
 * secret, the /metrics token, an MCP server's token, headers and environment, an alert channel's secret. It was
 * taken as the literal value and sent: the upstream refused every call (401), a webhook receiver every signature,
 * and /metrics answered only a scraper presenting the text `${METRICS_TOKEN}`.
 */
const dirs: string[] = [];
let upstream: ScriptedUpstream;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
});
afterAll(async () => {
  await upstream.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Loads a config file and starts a gateway on it, as `serve` does; the start's error message, or null. */
async function startFrom(yaml: string): Promise<string | null> {
  const cwd = mkdtempSync(join(tmpdir(), 'tollgate-placeholder-'));
  dirs.push(cwd);
  writeFileSync(join(cwd, 'tollgate.config.yaml'), yaml);
  try {
    const file = loadConfigFile({ TOLLGATE_CONFIG: 'tollgate.config.yaml' }, cwd);
    const tg = await startGateway(file.config, { APIM_KEY: 'apim-real' });
    await tg.stop();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('unexpanded ${VAR} placeholders in credential fields', () => {
  it('stop the start with a line naming the field and the env: reference to write', async () => {
    const cases: Array<[string, string]> = [
      [
        `providers:\n  lab:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: sk-a\n    headers:\n      ocp-apim-subscription-key: "\${APIM_KEY}"\n`,
        'providers.lab.headers.ocp-apim-subscription-key: ${APIM_KEY} is not expanded',
      ],
      [
        `providers:\n  az:\n    type: azure\n    base_url: https://x.openai.azure.com\n    auth: { type: entra, credential: client_secret, tenant_id: t, client_id: c, client_secret: "\${AZ_SECRET}" }\n`,
        'providers.az.auth.client_secret: ${AZ_SECRET} is not expanded',
      ],
      [`settings:\n  metrics:\n    bearer_token: "\${METRICS_TOKEN}"\n`, 'settings.metrics.bearer_token: ${METRICS_TOKEN} is not expanded'],
      [`mcp:\n  servers:\n    web:\n      type: http\n      url: http://127.0.0.1:9/mcp\n      token: "\${MCP_TOKEN}"\n`, 'mcp.servers.web.token: ${MCP_TOKEN} is not expanded'],
      [
        `alerts:\n  channels:\n    hook:\n      type: webhook\n      url: http://127.0.0.1:9/hook\n      secret: " \${HOOK_SECRET} "\n`,
        'alerts.channels.hook.secret: ${HOOK_SECRET} is not expanded',
      ],
    ];
    for (const [yaml, line] of cases) {
      const message = await startFrom(yaml);
      expect(message, yaml).toContain(line);
      expect(message, yaml).toContain(`write env:${/\$\{(\w+)\}/.exec(line)?.[1]}`);
    }
    // The reference itself still reads the variable.
    expect(await startFrom(`providers:\n  lab:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: sk-a\n    headers:\n      ocp-apim-subscription-key: env:APIM_KEY\n`)).toBeNull();
  });

  it('are a 400 naming the field through the API, and the running config keeps serving with the header it had', async () => {
    upstream.reset();
    const tg = await startGateway({ providers: { lab: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-a', headers: { 'ocp-apim-subscription-key': 'apim-real' } } } });
    try {
      const api = new AdminClient(`${tg.url}/api`);
      const put = await api.put('/providers/lab', { type: 'openai', base_url: `${upstream.url}/v1`, keys: [{ value: 'sk-b' }], headers: { 'ocp-apim-subscription-key': '${APIM_KEY}' } });
      expect(put.status).toBe(400);
      expect(put.body.error.code).toBe('invalid_config');
      expect(put.body.error.param).toBe('providers.lab.headers.ocp-apim-subscription-key');
      expect(put.body.error.message).toContain('${APIM_KEY} is not expanded');

      const patch = await api.patch('/config', { settings: { metrics: { bearer_token: '${METRICS_TOKEN}' } } });
      expect(patch.status).toBe(400);
      expect(patch.body.error.param).toBe('settings.metrics.bearer_token');
      // Nothing applied: /metrics is as open as before, and the config is at its first version.
      expect((await fetch(`${tg.url}/metrics`)).status).toBe(200);
      expect((await api.get('/config')).body.version).toBe(1);

      await tg.client.chat.completions.create({ model: 'lab/m', messages: [{ role: 'user', content: 'hi' }] });
      expect(upstream.calls.at(-1)?.headers['ocp-apim-subscription-key']).toBe('apim-real');
    } finally {
      await tg.stop();
    }
  });
});
