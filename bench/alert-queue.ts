// The alert delivery queue under a storm (`npx tsx bench/alert-queue.ts [--count 10000]`): how long accepting a burst
// of notifications holds the event loop (the bus is synchronous, so an alert's enqueue runs on the request path that
// raised it), and how long, and how much CPU, draining them to a receiver that answers at once takes. Figures, not a test.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { open } from 'lmdb';
import type { AlertChannelRuntime } from '../src/core/config.js';
import { createLog } from '../src/log.js';
import { OutboundNetwork } from '../src/network/outbound-network.js';
import { DeliveryQueue } from '../src/telemetry/alerts/delivery.js';
import type { AlertNotification } from '../src/telemetry/alerts/rules.js';

const { values } = parseArgs({ options: { count: { type: 'string', default: '10000' } } });
const count = Number(values.count);

function notification(i: number): AlertNotification {
  return { id: `alert-${i}`, rule: 'storm', event: 'request.failed', severity: 'warning', status: 'firing', summary: `alert ${i}`, subject: { provider: 'p' }, details: {}, at: new Date().toISOString() } as unknown as AlertNotification;
}

async function run(answer: boolean): Promise<{ enqueueMs: number; drainMs: number | null; drainCpuMs: number | null }> {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      if (answer) res.writeHead(204).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const dir = mkdtempSync(join(tmpdir(), 'alert-queue-bench-'));
  const root = open({ path: join(dir, 'db'), maxDbs: 8 });
  const channel = { name: 'ops', type: 'webhook', url, secret: null, headers: {}, timeoutMs: 60_000, maxAttempts: 3, initialDelayMs: 30, maxDelayMs: 60 } as unknown as AlertChannelRuntime;
  const queue = new DeliveryQueue({ root, log: createLog('silent'), channel: () => channel, maxQueue: () => count, userAgent: 'bench', outbound: new OutboundNetwork() });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) queue.enqueue('ops', notification(i));
  const enqueueMs = performance.now() - t0;
  let drainMs: number | null = null;
  let drainCpuMs: number | null = null;
  if (answer) {
    while (queue.size() > 0) await new Promise((done) => setTimeout(done, 20));
    drainMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    drainCpuMs = (cpu.user + cpu.system) / 1000;
  }
  await queue.close(10);
  await root.close();
  server.closeAllConnections();
  server.close();
  rmSync(dir, { recursive: true, force: true });
  if (answer && received < count) throw new Error(`only ${received} of ${count} delivered`);
  return { enqueueMs, drainMs, drainCpuMs };
}

const held = await run(false);
console.log(`${count} notifications accepted at once (receiver not answering): the event loop held ${held.enqueueMs.toFixed(0)} ms`);
const drained = await run(true);
console.log(`${count} notifications to a receiver answering at once: accepted in ${drained.enqueueMs.toFixed(0)} ms, all delivered after ${((drained.drainMs ?? 0) / 1000).toFixed(1)} s, ${((drained.drainCpuMs ?? 0) / 1000).toFixed(1)} s of CPU`);
