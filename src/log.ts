import { pino, type Logger } from 'pino';

export type Log = Pick<Logger, 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'child' | 'level'>;

/** JSON lines on stdout (pino): cheap, and what log shippers expect. */
export function createLog(level: string): Log {
  return pino({ level, base: { service: 'tollgate' } });
}
