import { afterAll, describe, expect, it } from 'vitest';
import type { GatewayError } from '../../src/core/errors.js';
import { UpstreamTransport } from '../../src/providers/transport.js';
import { OutboundNetwork } from '../../src/network/outbound-network.js';
import { freePort } from '../helpers/net.js';

const outbound = new OutboundNetwork();
const transport = new UpstreamTransport(outbound);
afterAll(() => outbound.close());

function failureOf(url: string): Promise<GatewayError> {
  return new Promise((resolve, reject) => {
    transport.dispatch({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body: '{}' }, { firstByteMs: 2_000, totalMs: 5_000, idleMs: 5_000 }, 'gemini', {
      onStart: () => reject(new Error('unexpected answer')),
      onData: () => undefined,
      onEnd: () => reject(new Error('unexpected end')),
      onError: resolve,
    });
  });
}

describe('transport errors', () => {
  it('tell the client what failed without the URL, and the operator the URL tried without its query string (where a key may travel)', async () => {
    const port = await freePort();
    const error = await failureOf(`http://127.0.0.1:${port}/v1beta/models/gemini-2.5-flash:generateContent?key=AIza-very-secret&alt=sse`);
    expect(error.status).toBe(502);
    expect(error.code).toBe('upstream_unreachable');
    expect(error.retryable).toBe(true);
    // What the client reads: which provider and what went wrong, not where the provider lives.
    expect(error.message).toBe('gemini: Could not reach the upstream (ECONNREFUSED: connection refused: nothing is listening there); check providers.gemini.base_url.');
    // What the operator's log and the request log read.
    expect(error.operatorMessage).toBe(
      `gemini: Could not reach the upstream at http://127.0.0.1:${port}/v1beta/models/gemini-2.5-flash:generateContent ` +
        '(ECONNREFUSED: connection refused: nothing is listening there); check providers.gemini.base_url.',
    );
  });

  it('never show user info of the URL, and cut a very long path', async () => {
    const port = await freePort();
    const error = await failureOf(`http://user:pass@127.0.0.1:${port}/${'m'.repeat(5_000)}`);
    expect(error.message).not.toContain('pass');
    expect(error.message).not.toContain(`127.0.0.1:${port}`);
    expect(error.operatorMessage).not.toContain('pass');
    expect(error.operatorMessage).toContain(`http://127.0.0.1:${port}/mmm`);
    expect(error.operatorMessage!.length).toBeLessThan(400);
  });
});
