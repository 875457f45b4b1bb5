export interface SuiteRow {
  target: string;
  mode: 'json' | 'stream';
  connections: number;
  rps: number;
  /** ms to the whole answer (the last byte). */
  p50: number;
  p99: number;
  /** ms to the first byte of the body (streams; the same as p50/p99 for whole answers). */
  firstP50: number;
  firstP99: number;
  cpuPerRequestUs: number;
  non2xx: number;
  errors: number;
}

const FLOOR = 'upstream direct';
const BASELINE = 'bare proxy';
const fixed = (value: number, digits = 3): string => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
const ratio = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(2)}x` : 'n/a');
const row = (cells: string[]): string => `| ${cells.join(' | ')} |`;

/**
 * The suite's figures as Markdown: every measurement, then each target's cost over the floor (upstream direct)
 * divided by the bare proxy's: added latency (p50, p99; for streams to the first and the last byte), throughput and
 * CPU per request. A ratio of 1.00x costs what the proxy costs.
 */
export function formatSuite(rows: SuiteRow[]): string {
  const lines = [
    row(['target', 'mode', 'conns', 'RPS', 'first byte p50 ms', 'p50 ms', 'p99 ms', 'CPU µs/req', 'non-2xx', 'errors']),
    row(['---', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
    ...rows.map((r) =>
      row([r.target, r.mode, String(r.connections), fixed(r.rps, 0), r.mode === 'stream' ? fixed(r.firstP50) : '', fixed(r.p50), fixed(r.p99), fixed(r.cpuPerRequestUs, 0), String(r.non2xx), String(r.errors)]),
    ),
    '',
    'Against the bare proxy (added = minus upstream direct; lower is better except throughput):',
    '',
    row(['target', 'mode', 'conns', 'added first byte p50', 'added p50', 'added p99', 'throughput', 'CPU/req']),
    row(['---', '---', '---:', '---:', '---:', '---:', '---:', '---:']),
  ];
  const find = (target: string, mode: string, connections: number) => rows.find((r) => r.target === target && r.mode === mode && r.connections === connections);
  for (const r of rows) {
    if (r.target === FLOOR || r.target === BASELINE) continue;
    const floor = find(FLOOR, r.mode, r.connections);
    const base = find(BASELINE, r.mode, r.connections);
    if (!floor || !base) continue;
    const added = (a: number, b: number, f: number) => (a - f) / (b - f);
    lines.push(
      row([
        r.target,
        r.mode,
        String(r.connections),
        r.mode === 'stream' ? ratio(added(r.firstP50, base.firstP50, floor.firstP50)) : '',
        ratio(added(r.p50, base.p50, floor.p50)),
        ratio(added(r.p99, base.p99, floor.p99)),
        ratio(r.rps / base.rps),
        ratio(r.cpuPerRequestUs / base.cpuPerRequestUs),
      ]),
    );
  }
  return lines.join('\n');
}
