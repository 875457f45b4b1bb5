// A client that leaves while its request's body is still coming (a dropped connection, a killed process mid-upload)
// gets no answer, and so no onResponse: its call is still logged, as the 499 a client that leaves later gets, and
// counted in usage, under the key it presented.
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const { api, createKey } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up' } } });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

/** Sends a chat request's headers and the first bytes of its body, then drops the connection. */
async function leaveMidUpload(key: string): Promise<void> {
  const { port } = new URL(tg.url);
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise<void>((done) => socket.once('connect', () => done()));
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer ${key}\r\nContent-Length: 200\r\n\r\n{"mod`);
  await new Promise((done) => setTimeout(done, 100));
  socket.destroy();
}

it('logs a call whose client left mid-upload as a cancelled 499 under its key, and counts it in usage', async () => {
  const key = await createKey({ name: 'uploader' });
  await leaveMidUpload(key.key);
  let entries: Array<Record<string, unknown>> = [];
  for (let i = 0; i < 100 && entries.length === 0; i++) {
    await new Promise((done) => setTimeout(done, 50));
    entries = (await api('GET', `/api/logs?key_id=${key.id}`)).body.data;
  }
  expect(entries).toHaveLength(1);
  expect(entries[0]).toMatchObject({ status: 499, cancelled: true, key_id: key.id, path: '/v1/chat/completions', error_code: 'client_cancelled' });
  expect(upstream.calls).toHaveLength(0);
  let usage: Array<{ group: string; requests: number; errors: number }> = [];
  for (let i = 0; i < 60 && usage.length === 0; i++) {
    await new Promise((done) => setTimeout(done, 100));
    usage = (await api('GET', '/api/usage?group_by=key')).body.totals ?? [];
  }
  // A request, not an error: as every 499, the client left (usage-rollup.ts).
  expect(usage.find((row) => row.group === key.id)).toMatchObject({ requests: 1, errors: 0 });
}, 20_000);
