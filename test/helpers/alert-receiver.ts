import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ALERT_NOTIFICATION_SCHEMA } from '../../src/telemetry/alerts/notification-schema.js';

// A webhook receiver for alert tests (it records every delivery and answers as scripted), the README's signature
// check loaded as written, and a polling wait.

/**
 * How the receiver answers a delivery: 200, 200 after half a second (`slow`), 500, a reset connection, never (`hang`),
 * a redirect (`307`), or 429 asking to come back in 30 s (`429`, `Retry-After: 30`).
 */
export type Behaviour = 'ok' | 'slow' | '500' | 'reset' | 'hang' | '307' | '429';

export interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
  answered: Behaviour;
}

export interface Receiver {
  url: string;
  deliveries: Delivery[];
  /** Behaviours for the next deliveries, in order; then `ok`. */
  script: Behaviour[];
  close(): Promise<void>;
}

export async function startReceiver(script: Behaviour[] = []): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  const receiver = { deliveries, script: [...script] } as Receiver;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const answered = receiver.script.shift() ?? 'ok';
      deliveries.push({ headers: req.headers, body, json: JSON.parse(body), answered });
      if (answered === 'reset') return req.socket.resetAndDestroy();
      if (answered === 'hang') return;
      if (answered === 'slow') return void setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'), 500);
      if (answered === '307') return void res.writeHead(307, { location: `${receiver.url}/elsewhere` }).end();
      if (answered === '429') return void res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '30' }).end('slow down');
      res.writeHead(answered === '500' ? 500 : 200, { 'content-type': 'text/plain' }).end(answered === '500' ? 'receiver broke' : 'ok');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/tollgate`;
  receiver.close = () => new Promise<void>((done) => {
    server.closeAllConnections();
    server.close(() => done());
  });
  return receiver;
}

/** The README's verification snippet (the ```js block under "Verifying a delivery"), imported as written. */
export type Verify = (secret: string, headers: Record<string, string | string[] | undefined>, body: string) => boolean;
export async function documentedVerify(): Promise<Verify> {
  const readme = readFileSync(resolve(import.meta.dirname, '../../README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### Verifying a delivery'));
  const block = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('README.md has no ```js block under "Verifying a delivery"');
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-verify-'));
  const file = join(dir, 'verify.mjs');
  writeFileSync(file, block);
  try {
    const module = (await import(pathToFileURL(file).href)) as { verifyTollgateSignature: Verify };
    return module.verifyTollgateSignature;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function until<T>(what: string, check: () => T | undefined | null | false, timeoutMs = 8_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 20));
  }
}


// ajv-formats is CommonJS: under ESM its function may arrive as the module's `default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;
const schemaChecker = new Ajv2020({ strict: true, allErrors: true });
addFormats(schemaChecker);

/** Whether a delivered notification is valid against the published JSON Schema (`validNotification.errors` says why not). */
export const validNotification = schemaChecker.compile(ALERT_NOTIFICATION_SCHEMA);
