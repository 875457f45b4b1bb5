import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, until, type Receiver } from '../helpers/alert-receiver.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';

// Delivery edges through a real gateway and a receiver on loopback.

const URL_PASSWORD = 'hunter2-url-password-0123';

describe('a webhook whose URL carries user and password', () => {
  let receiver: Receiver;
  let tg: RunningGateway;
  const { api } = gatewayApi(() => tg.url);

  beforeAll(async () => {
    receiver = await startReceiver();
    const url = receiver.url.replace('http://', `http://alerts:${URL_PASSWORD}@`);
    tg = await startGateway({
      providers: { openai: { base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-upstream' } },
      alerts: {
        channels: { ops: { type: 'webhook', url, secret: 'whsec-basic', retry: { max_attempts: 1 } } },
        rules: [{ name: 'breaker', kind: 'breaker_opened' }],
      },
    });
  });
  afterAll(async () => {
    await tg?.stop();
    await receiver?.close();
  });

  it('is delivered with the credentials as basic auth, and the password is never in the delivery log', async () => {
    const tested = await api('POST', '/api/alerts/channels/ops/test');
    expect(tested.status).toBe(200);
    const line = tested.body as Record<string, unknown>;
    expect(JSON.stringify(line)).not.toContain(URL_PASSWORD);
    expect(line).toMatchObject({ outcome: 'delivered', httpStatus: 200 });
    const delivery = await until('the test delivery', () => receiver.deliveries[0]);
    expect(delivery.headers.authorization).toBe(`Basic ${Buffer.from(`alerts:${URL_PASSWORD}`).toString('base64')}`);
    const log = JSON.stringify((await api('GET', '/api/alerts/deliveries')).body);
    expect(log).not.toContain(URL_PASSWORD);
  });
});
