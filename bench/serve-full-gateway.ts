// Child-process entry: tollgate with everything on, as issue 22's "full pipeline" asks: request logs (always on),
// Prometheus metrics, every request traced to a live OTLP receiver (`--otlp`), the response cache on (exact tier:
// the semantic tier's sentence embeddings are a model run per miss, measured on their own in bench/cache.ts), and
// regex/PII/secret guardrail rules on both sides. The virtual key with a rate limit and a budget is made by the
// bench through /api/keys, as an operator would.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGateway } from './gateway-module.js';
import { readServeArgs } from './serve-args.js';
import { serveControl } from './serve-control.js';

const args = readServeArgs(true);
const { createGateway, silentLog } = await loadGateway();
const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-full-'));
const gateway = await createGateway({
  config: {
    providers: { openai: { base_url: `${args.upstream}/v1`, api_key: 'sk-bench' } },
    settings: {
      data_dir: dataDir,
      metrics: { enabled: true },
      ...(args.otlp ? { tracing: { endpoint: args.otlp, sample_ratio: args.sample } } : {}),
    },
    cache: { mode: 'on', semantic: { enabled: false } },
    guardrails: {
      rules: [
        { name: 'cards', kind: 'payment_card', action: 'block' },
        { name: 'emails', kind: 'email', action: 'redact' },
        { name: 'ids', kind: 'national_id', action: 'redact', formats: ['us_ssn', 'uk_nino'] },
        { name: 'keys', kind: 'secret', action: 'redact' },
        { name: 'internal-urls', kind: 'regex', patterns: ['https?://[a-z0-9.-]+\\.corp\\.example\\b'], action: 'redact' },
      ],
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
