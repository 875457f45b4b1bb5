// Child-process entry: tollgate with the default pipeline and one `openai` provider pointed at the upstream;
// `--metrics off` turns Prometheus metrics off, `--otlp <url>` exports every span there.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGateway } from './gateway-module.js';
import { readServeArgs } from './serve-args.js';
import { serveControl } from './serve-control.js';

const args = readServeArgs(true);
const { createGateway, silentLog } = await loadGateway();
// A fresh store per run, so earlier runs' data cannot change the cost of this one.
const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
const gateway = await createGateway({
  config: {
    providers: { openai: { base_url: `${args.upstream}/v1`, api_key: 'sk-bench' } },
    settings: {
      data_dir: dataDir,
      metrics: { enabled: args.metrics },
      ...(args.otlp ? { tracing: { endpoint: args.otlp, sample_ratio: args.sample } } : {}),
    },
  },
  env: {},
  log: silentLog,
});
const url = await gateway.listen({ port: args.port, host: '127.0.0.1' });
serveControl(url, async () => {
  try {
    await gateway.close(1000);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
