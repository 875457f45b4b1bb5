import { networkInterfaces } from 'node:os';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { startConnectProxy, type ConnectProxy } from '../helpers/connect-proxy.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// NO_PROXY (or settings.network.no_proxy) lists "IP addresses" reached directly (README, "Private networks"). An IPv6
// address is written there bare, as curl, Go and Python read it (`NO_PROXY=localhost,127.0.0.1,::1` is the usual
// line), while the URL of the destination brackets it (`http://[::1]:8000`). Each call here goes to a provider on the
// IPv6 loopback address with a proxy configured; the proxy records every tunnel asked of it, and must see none.

/**
 * Whether this machine has the IPv6 loopback address (a host or container with IPv6 turned off has not): without it
 * no upstream can listen there, and the cases below cannot be run (they are reported skipped, not passed).
 */
const IPV6_LOOPBACK = Object.values(networkInterfaces()).some((addresses) => addresses?.some((address) => address.address === '::1'));
if (!IPV6_LOOPBACK) console.warn('network-audit-no-proxy: no ::1 on this machine; the IPv6 NO_PROXY cases are skipped');

let upstream: ScriptedUpstream;
let port: number;
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  if (!IPV6_LOOPBACK) return;
  // The machine's own IPv6 loopback address: nothing leaves it.
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test', host: '::1' });
  port = Number(new URL(upstream.url).port);
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await upstream?.close();
});

async function proxy(): Promise<ConnectProxy> {
  const started = await startConnectProxy();
  cleanups.push(() => started.close());
  return started;
}

async function gateway(config: ConfigInput, env: Record<string, string>): Promise<RunningGateway> {
  const tg = await startGateway(config, env);
  cleanups.push(() => tg.stop());
  return tg;
}

function onIpv6Loopback(settings?: ConfigInput['settings']): ConfigInput {
  return {
    providers: { openai: { base_url: `http://[::1]:${port}/v1`, api_key: 'sk-upstream-test' } },
    ...(settings ? { settings } : {}),
  };
}

async function chat(client: OpenAI): Promise<string> {
  const answer = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'direct, not through the proxy' }] });
  return answer.choices[0]!.message.content ?? '';
}

describe.skipIf(!IPV6_LOOPBACK)('NO_PROXY with IPv6 addresses', () => {
  it('NO_PROXY=localhost,127.0.0.1,::1 sends calls to http://[::1]:port directly', async () => {
    const corporate = await proxy();
    const before = upstream.calls.length;
    const tg = await gateway(onIpv6Loopback(), { HTTP_PROXY: corporate.url, HTTPS_PROXY: corporate.url, NO_PROXY: 'localhost,127.0.0.1,::1' });
    expect(await chat(tg.client)).not.toBe('');
    expect(upstream.calls.length - before).toBe(1);
    expect(corporate.tunnels).toEqual([]);
    expect(corporate.plain).toEqual([]);
  });

  it('settings.network.no_proxy: [::1] (and the long form 0:0:0:0:0:0:0:1) go direct as well', async () => {
    for (const entry of ['::1', '0:0:0:0:0:0:0:1']) {
      const corporate = await proxy();
      const tg = await gateway(onIpv6Loopback({ network: { proxy: corporate.url, no_proxy: ['localhost', entry] } }), {});
      expect(await chat(tg.client), entry).not.toBe('');
      expect(corporate.tunnels, entry).toEqual([]);
    }
  });

  it('an IPv6 address with a port (`[::1]:port`) goes direct only on that port', async () => {
    const corporate = await proxy();
    const tg = await gateway(onIpv6Loopback({ network: { proxy: corporate.url, no_proxy: [`[::1]:${port}`] } }), {});
    expect(await chat(tg.client)).not.toBe('');
    expect(corporate.tunnels).toEqual([]);

    const elsewhere = await proxy();
    const other = await gateway(onIpv6Loopback({ network: { proxy: elsewhere.url, no_proxy: [`[::1]:${port + 1 === 65536 ? 1 : port + 1}`] } }), {});
    expect(await chat(other.client)).not.toBe('');
    expect(elsewhere.tunnels).toEqual([`[::1]:${port}`]);
  });

  it('`*` among other entries still means every destination (NO_PROXY=localhost,*, or no_proxy: [localhost, "*"])', async () => {
    const corporate = await proxy();
    const fromEnv = await gateway(onIpv6Loopback(), { HTTPS_PROXY: corporate.url, HTTP_PROXY: corporate.url, NO_PROXY: 'localhost, *' });
    expect(await chat(fromEnv.client)).not.toBe('');
    const fromFile = await gateway(onIpv6Loopback({ network: { proxy: corporate.url, no_proxy: ['localhost', '*'] } }), {});
    expect(await chat(fromFile.client)).not.toBe('');
    expect(corporate.tunnels).toEqual([]);
  });
});
