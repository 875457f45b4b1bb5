import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import type { GatewayEvents } from '../../src/core/events.js';
import { reportRefusedCalls } from '../../src/http/refusal-events.js';

/**
 * Calls the pipeline took are its to report; reportRefusedCalls reports only those refused before it. What it
 * remembers of the pipeline's calls must not run out when clients leave their answers (no onResponse fires then).
 */

const TRACKED = 20;
let app: FastifyInstance;
let bus: EventBus;
let url: string;
const failed: string[] = [];
let release: () => void = () => undefined;

/** A terminal event's payload: the fields these tests read, the rest as the pipeline's summary has them. */
function summary(requestId: string, status: number): Record<string, unknown> {
  return { requestId, dialect: 'openai', path: '/v1/chat/completions', operation: 'chat', model: 'm', route: null, provider: 'p', upstreamModel: 'm', keyId: 'vk_1', teamId: null, stream: true, status, durationMs: 1, attempts: 1, fallback: false, upstreamMs: 1, firstTokenMs: null, finishReasons: [], user: null, metadata: null, bodies: null, cache: null, guardrails: null, usage: null, costUsd: 0, priced: true, estimated: false };
}

beforeEach(async () => {
  failed.length = 0;
  bus = new EventBus();
  bus.on('request.failed', (event) => failed.push(event.requestId));
  app = Fastify();
  reportRefusedCalls(app, bus, () => 1_000_000, () => null, TRACKED);
  // A model route as a dialect runs it: the pipeline takes the call (request.received) and ends it in one terminal event.
  app.post('/v1/chat/completions', async (request, reply) => {
    bus.emit('request.received', { requestId: request.id, dialect: 'openai', model: 'm', stream: true, at: Date.now() });
    reply.hijack();
    if ((request.body as { mode: string }).mode === 'stream') {
      // A stream whose client leaves: the pipeline reports a 499, and no onResponse fires.
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
      reply.raw.write('data: {}\n\n');
      reply.raw.once('close', () => bus.emit('request.completed', { ...summary(request.id, 499), cancelled: true } as unknown as GatewayEvents['request.completed']));
      return;
    }
    // An upstream failure answered after a while.
    await new Promise<void>((resolve) => (release = resolve));
    reply.raw.writeHead(502, { 'content-type': 'application/json' });
    reply.raw.end('{"error":{"message":"upstream failed"}}');
    bus.emit('request.failed', { ...summary(request.id, 502), type: 'api_error', code: 'upstream_error', message: 'upstream failed', cancelled: false } as unknown as GatewayEvents['request.failed']);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterEach(async () => {
  await app.close();
});

function post(body: unknown): Promise<{ status: number; id: string; text: string }> {
  return fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (res) => ({
    status: res.status,
    id: res.headers.get('x-request-id') ?? '',
    text: await res.text(),
  }));
}

/** A streamed call whose client leaves after the first bytes; resolves once the server has seen it go. */
function leftStream(): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.once('data', () => req.destroy());
    });
    req.on('error', () => undefined);
    req.on('close', () => setTimeout(resolve, 20));
    req.on('timeout', reject);
    req.end(JSON.stringify({ mode: 'stream' }));
  });
}

describe('calls refused before the pipeline', () => {
  it('are not reported for a call the pipeline took, however many clients left their streams meanwhile', async () => {
    const received: string[] = [];
    bus.on('request.received', (event) => received.push(event.requestId));
    const slow = post({ mode: 'fail' });
    while (received.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    for (let i = 0; i < TRACKED * 2; i++) await leftStream();
    release();
    const answer = await slow;
    expect(answer.status).toBe(502);
    // Only the pipeline's own terminal event: a second one, from the refusal path, would log and count the call again.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(failed.filter((id) => id === received[0])).toHaveLength(1);
  });
});
