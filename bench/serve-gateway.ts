// Child-process entry: tollgate with the default pipeline and one `openai` provider pointed at the upstream;
// `--metrics off` turns Prometheus metrics off, `--otlp <url>` exports every span there.
import { serveBenchGateway } from './gateway-module.js';
import { readServeArgs } from './serve-args.js';

const args = readServeArgs(true);
await serveBenchGateway(args, { metrics: args.metrics, dataDirPrefix: 'tollgate-bench-' });
