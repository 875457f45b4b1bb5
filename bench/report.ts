
export type TargetName = 'upstream' | 'tollgate' | 'bare-proxy';
export type Mode = 'json' | 'stream';

export interface Measurement {
  target: TargetName;
  mode: Mode;
  connections: number;
  rps: number;
  /** Latency percentiles in ms over all 2xx responses of the measured slices. */
  p50: number;
  p99: number;
  completed: number;
  non2xx: number;
  errors: number;
  /** CPU (user + system) of the process autocannon talked to, per completed request, in µs. */
  cpuPerRequestUs: number;
  /** CPU of the upstream process per completed request, in µs (the same process as above for target a). */
  upstreamCpuPerRequestUs: number;
  /** CPU share of the whole machine used by processes other than the bench's own, while measuring. */
  backgroundCpuPct: number;
}

const LABEL: Record<TargetName, string> = {
  upstream: '(a) upstream direct',
  tollgate: '(b) tollgate',
  'bare-proxy': '(c) bare undici proxy',
};

const fixed = (value: number, digits: number): string => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
const signed = (value: number): string => (Number.isFinite(value) ? `${value >= 0 ? '+' : ''}${value.toFixed(3)}` : 'n/a');

function row(cells: string[]): string {
  return `| ${cells.join(' | ')} |`;
}

/** The results as a Markdown table (readable in a terminal, pasteable into RESULTS.md), plus the ratios. */
export function formatReport(measurements: Measurement[]): string {
  const lines = [
    row(['target', 'mode', 'conns', 'RPS', 'p50 ms', 'p99 ms', 'added p50 ms', 'added p99 ms', 'CPU µs/req', 'upstream CPU µs/req', 'other load %', 'non-2xx', 'errors']),
    row(['---', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
  ];
  const ratios: string[] = [];
  const baseline = (m: Measurement): Measurement | undefined =>
    measurements.find((b) => b.target === 'upstream' && b.mode === m.mode && b.connections === m.connections);

  for (const m of measurements) {
    const base = baseline(m);
    const direct = m.target === 'upstream' || !base;
    lines.push(
      row([
        LABEL[m.target],
        m.mode,
        String(m.connections),
        fixed(m.rps, 0),
        fixed(m.p50, 3),
        fixed(m.p99, 3),
        direct ? '' : signed(m.p50 - base.p50),
        direct ? '' : signed(m.p99 - base.p99),
        fixed(m.cpuPerRequestUs, 0),
        fixed(m.upstreamCpuPerRequestUs, 0),
        fixed(m.backgroundCpuPct, 0),
        String(m.non2xx),
        String(m.errors),
      ]),
    );
  }

  for (const m of measurements) {
    if (m.target !== 'tollgate') continue;
    const base = baseline(m);
    const bare = measurements.find((b) => b.target === 'bare-proxy' && b.mode === m.mode && b.connections === m.connections);
    if (!base || !bare) continue;
    const added = m.p50 - base.p50;
    const bareAdded = bare.p50 - base.p50;
    const ratio = bareAdded > 0 ? added / bareAdded : Number.NaN;
    const verdict = Number.isFinite(ratio) ? (ratio <= 2 ? 'within the 2x target' : 'OVER the 2x target') : 'bare proxy added nothing measurable';
    const cpuRatio = m.cpuPerRequestUs / bare.cpuPerRequestUs;
    ratios.push(
      `${m.mode}, ${m.connections} conn: tollgate adds ${fixed(added, 3)} ms p50, bare proxy ${fixed(bareAdded, 3)} ms ` +
        `-> ratio ${fixed(ratio, 2)}x (${verdict}); CPU/req ${fixed(cpuRatio, 2)}x the bare proxy's`,
    );
  }
  return [...lines, '', ...ratios].join('\n');
}
