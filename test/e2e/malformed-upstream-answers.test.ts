import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { processAlive, spawnMain, type MainProcess } from '../helpers/main-process.js';

/**
 * An OpenAI-compatible server (a self-hosted one, a proxy with a bug) that answers 200 with choices of the wrong
 * shape. The gateway runs as a real process: a TypeError in a stage's subscriber used to be an uncaught exception
 * there, which `tollgate serve` answers by exiting, with every other request in flight.
 */
const COMPLETION = { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'm' };
const CHUNK = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm' };
const CASES: Record<string, { json: unknown[]; chunk: unknown[] }> = {
  'a null choice': { json: [null], chunk: [null] },
  'a message that is not an object': { json: [{ index: 0, message: 5, finish_reason: 'stop' }], chunk: [{ index: 0, delta: 5 }] },
  'tool_calls that are not a list': {
    json: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: 5 }, finish_reason: 'tool_calls' }],
    chunk: [{ index: 0, delta: { tool_calls: 5 } }],
  },
  'a null tool call': {
    json: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [null] }, finish_reason: 'tool_calls' }],
    chunk: [{ index: 0, delta: { tool_calls: [null] } }],
  },
};
const NAMES = Object.keys(CASES);

let upstream: Server;
let gateway: MainProcess;
let dir: string;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let raw = '';
    req.on('data', (data: Buffer) => (raw += data.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as { model: string; stream?: boolean };
      // `bad-<n>` answers case n; any other model answers well.
      const which = /^bad-(\d+)$/.exec(body.model);
      const shape = which ? CASES[NAMES[Number(which[1])] as string] : null;
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const choices = shape ? shape.chunk : [{ index: 0, delta: { role: 'assistant', content: 'fine' }, finish_reason: 'stop' }];
        res.write(`data: ${JSON.stringify({ ...CHUNK, choices })}\n\n`);
        res.end('data: [DONE]\n\n');
        return;
      }
      const choices = shape ? shape.json : [{ index: 0, message: { role: 'assistant', content: 'fine' }, finish_reason: 'stop' }];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...COMPLETION, choices, usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
    });
  });
  await new Promise<void>((done) => upstream.listen(0, '127.0.0.1', done));
  dir = mkdtempSync(join(tmpdir(), 'tollgate-malformed-'));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  writeFileSync(
    join(dir, 'tollgate.config.yaml'),
    // One attempt: the test is about what the client gets from this one upstream, not about fallbacks.
    ['settings:', '  routing: { retry: { max_attempts: 1 } }', 'providers:', '  selfhosted:', '    type: openai', `    base_url: ${url}`, '    api_key: sk-any', ''].join('\n'),
  );
  gateway = await spawnMain({ cwd: dir, env: { LOG_LEVEL: 'error' } });
}, 40_000);

afterAll(async () => {
  gateway?.child.kill('SIGTERM');
  await gateway?.exit;
  await new Promise((done) => upstream?.close(done));
  rmSync(dir, { recursive: true, force: true });
});

describe('an upstream answer whose choices have the wrong shape', () => {
  it.each(NAMES.map((name, index) => [name, index] as const))('(%s) fails that request with 502 invalid_upstream_response, whole and streamed, and the gateway serves on', async (_name, index) => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];
    const whole = await client.chat.completions.create({ model: `selfhosted/bad-${index}`, messages }).catch((err: unknown) => err);
    expect(whole).toBeInstanceOf(OpenAI.InternalServerError);
    expect(whole).toMatchObject({ status: 502, code: 'invalid_upstream_response' });

    const streamed = await client.chat.completions
      .create({ model: `selfhosted/bad-${index}`, messages, stream: true })
      .then(async (stream) => {
        for await (const _chunk of stream) {
          // drained
        }
        return null;
      })
      .catch((err: unknown) => err);
    expect(streamed).toMatchObject({ status: 502, code: 'invalid_upstream_response' });

    // The same process answers the next request.
    expect(processAlive(gateway.serverPid)).toBe(true);
    const fine = await client.chat.completions.create({ model: 'selfhosted/good', messages });
    expect(fine.choices[0]?.message.content).toBe('fine');
  });
});
