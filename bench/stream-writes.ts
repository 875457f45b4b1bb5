// What writing a streamed answer's events to the client's socket costs the gateway's process, per stream of 22
// events that arrive in one upstream read (as the scripted upstream's do): each event its own `res.write` within a
// corked tick (what tickCorkedWriter did: Node frames every write as a chunk of its own, four buffers a write, so
// one writev of some ninety buffers), against the tick's events joined and written once (TickWriter). The server runs in this
// process and is timed (process.cpuUsage: its own CPU, the HTTP parsing of each request included alike); the
// client, ten keep-alive connections asking back to back, runs in a child process. Rounds take turns.
//
//   npx tsx bench/stream-writes.ts [--streams 4000] [--rounds 5] [--ticks 1]
// (`--ticks n`: the events spread over n upstream reads, each written in its own tick.)
import { fork } from 'node:child_process';
import { createServer, request, Agent, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { TickWriter } from '../src/http/answer-stream.js';
import { planCompletion, streamFrames } from '../test/upstream/openai-responses.js';
import { parseChatRequest } from '../test/upstream/openai-request.js';

const { values } = parseArgs({
  options: { streams: { type: 'string', default: '4000' }, rounds: { type: 'string', default: '5' }, ticks: { type: 'string', default: '1' }, client: { type: 'string' } },
});

if (values.client !== undefined) {
  // The child: asks for `streams` answers over ten keep-alive connections, reads and drops them.
  const [port, streams] = values.client.split(':').map(Number) as [number, number];
  const agent = new Agent({ keepAlive: true, maxSockets: 10 });
  let left = streams;
  const one = (done: () => void): void => {
    if (left-- <= 0) return done();
    request({ port, host: '127.0.0.1', path: '/', agent }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => one(done));
    }).end();
  };
  let running = 10;
  for (let i = 0; i < 10; i++) one(() => --running === 0 && process.send?.('done'));
} else {
  const STREAMS = Number(values.streams);
  const ROUNDS = Number(values.rounds);
  const TICKS = Number(values.ticks);
  const parsed = parseChatRequest({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  if (!parsed.ok) throw new Error('the scripted request did not parse');
  const pieces = Array.from({ length: 20 }, (_, i) => `word${i} `);
  const frames = streamFrames(planCompletion(parsed.request, pieces)).filter((frame) => !frame.startsWith('data: [DONE]'));
  const perTick = Math.ceil(frames.length / TICKS);
  const HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };

  /** What a route's writer gives the call stage: a write per event, and the backpressure check after it. */
  interface Writer {
    write(text: string): void;
    backedUp(): boolean;
  }
  /** Each event its own write, the tick's writes corked together (tickCorkedWriter before). */
  const corked = (res: ServerResponse): Writer => {
    let on = false;
    const uncork = (): void => {
      on = false;
      res.uncork();
    };
    return {
      write(text) {
        if (!on) {
          on = true;
          res.cork();
          process.nextTick(uncork);
        }
        res.write(text);
      },
      backedUp: () => res.writableNeedDrain && !res.destroyed,
    };
  };
  /** The tick's events joined, one write at the tick's end (TickWriter, after). */
  const joined = (res: ServerResponse): Writer => new TickWriter(res);

  const serve = (writer: (res: ServerResponse) => Writer) =>
    createServer({ keepAlive: true, noDelay: true }, (req, res) => {
      req.resume();
      res.writeHead(200, HEADERS);
      const out = writer(res);
      let at = 0;
      // One upstream read's events a turn of the event loop, the end in a later one (after the spend's commit). undici
      // hands the call stage each HTTP chunk of a read (an event each), and the call stage checks backpressure after each.
      const tick = (): void => {
        for (const frame of frames.slice(at, at + perTick)) {
          out.write(frame);
          out.backedUp();
        }
        at += perTick;
        if (at < frames.length) setImmediate(tick);
        else setImmediate(() => res.end('data: [DONE]\n\n'));
      };
      tick();
    });

  const servers = { corked: serve(corked), joined: serve(joined) };
  const ports: Record<string, number> = {};
  for (const [name, server] of Object.entries(servers)) {
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
    ports[name] = (server.address() as AddressInfo).port;
  }
  const run = async (name: string, streams: number): Promise<number> => {
    // The server is idle while the child starts: its CPU from here on is the streams'.
    const before = process.cpuUsage();
    const child = fork(new URL(import.meta.url).pathname, ['--client', `${ports[name]}:${streams}`], { execArgv: ['--import', 'tsx'] });
    await new Promise<void>((ready) => child.once('message', () => ready()));
    const used = process.cpuUsage(before);
    child.kill();
    return (used.user + used.system) / streams;
  };
  console.log(`${frames.length} events a stream in ${TICKS} tick(s), ${STREAMS} streams a round, ${ROUNDS} rounds taking turns (server CPU µs per stream)`);
  await run('corked', 500);
  await run('joined', 500);
  for (let round = 0; round < ROUNDS; round++) {
    const a = await run('corked', STREAMS);
    const b = await run('joined', STREAMS);
    console.log(`round ${round + 1}: each event written ${a.toFixed(1)}  joined ${b.toFixed(1)}`);
  }
  for (const server of Object.values(servers)) server.close();
  process.exit(0);
}
