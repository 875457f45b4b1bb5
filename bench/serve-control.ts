import { createInterface } from 'node:readline';

/**
 * The child side of the bench's control channel. A server process announces `listening <url>` on stdout,
 * answers a `cpu` line on stdin with `cpu <user µs> <system µs>` (its own process.cpuUsage(), so CPU per
 * request can be computed without a profiler or an extra HTTP route), and shuts down when stdin closes or
 * it gets SIGTERM/SIGINT. Closing on stdin's end means a child never outlives the bench, even if the bench
 * itself is killed with SIGKILL.
 */
export function serveControl(url: string, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    // A server that hangs on close must not keep the bench waiting; the parent also has a kill timer.
    setTimeout(() => process.exit(0), 3000).unref();
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };

  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    if (line.trim() === 'cpu') {
      const usage = process.cpuUsage();
      process.stdout.write(`cpu ${usage.user} ${usage.system}\n`);
    }
  });
  lines.on('close', stop);
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdout.write(`listening ${url}\n`);
}
