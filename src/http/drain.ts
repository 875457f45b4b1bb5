import type { ServerResponse } from 'node:http';

/** Resolves when the socket buffer has room again, or the client is gone. */
export function drained(res: ServerResponse): Promise<void> {
  return new Promise<void>((ready) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      ready();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
