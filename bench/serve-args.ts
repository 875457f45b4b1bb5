import { parseArgs } from 'node:util';

export interface ServeArgs {
  port: number;
  /** Base URL of the scripted upstream (no `/v1`); empty for the upstream itself. */
  upstream: string;
  /** Gateway only: `on` (default) or `off` for Prometheus metrics. */
  metrics: boolean;
  /** Gateway only: an OTLP/HTTP traces URL to export every span to (100% sampled); empty for no tracing. */
  otlp: string;
  /** Gateway only: the share of requests traced (default 1). */
  sample: number;
  /** Upstream only: answer with this many word pieces (0: the short echo). */
  pieces: number;
}

/** `--port <n>` (0 = ephemeral) and `--upstream <url>`, shared by the serve-* entry scripts. */
export function readServeArgs(needsUpstream: boolean): ServeArgs {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      upstream: { type: 'string', default: '' },
      metrics: { type: 'string', default: 'on' },
      otlp: { type: 'string', default: '' },
      sample: { type: 'string', default: '1' },
      pieces: { type: 'string', default: '0' },
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0) throw new Error(`bad --port: ${values.port}`);
  if (needsUpstream && !values.upstream) throw new Error('--upstream <url> is required');
  return { port, upstream: (values.upstream ?? '').replace(/\/+$/, ''), metrics: values.metrics !== 'off', otlp: values.otlp ?? '', sample: Number(values.sample), pieces: Number(values.pieces) };
}
