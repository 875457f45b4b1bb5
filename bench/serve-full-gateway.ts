// Child-process entry: tollgate with everything on, as issue 22's "full pipeline" asks: request logs (always on),
// Prometheus metrics, every request traced to a live OTLP receiver (`--otlp`), the response cache on (exact tier:
// the semantic tier's sentence embeddings are a model run per miss, measured on their own in bench/cache.ts), and
// regex/PII/secret guardrail rules on both sides. The virtual key with a rate limit and a budget is made by the
// bench through /api/keys, as an operator would.
import { serveBenchGateway } from './gateway-module.js';
import { readServeArgs } from './serve-args.js';

const args = readServeArgs(true);
await serveBenchGateway(args, {
  metrics: true,
  dataDirPrefix: 'tollgate-bench-full-',
  sections: {
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
});
