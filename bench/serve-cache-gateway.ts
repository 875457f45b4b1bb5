// Child-process entry for bench/cache.ts: tollgate with the default pipeline, one `openai` provider pointed at the
// upstream, and the response cache on, over a data directory the bench owns (filled beforehand; never deleted here).
//
//   --port <n> --upstream <url> --data-dir <dir> [--max-entries <n>] [--semantic on|off]
//
// Besides the control channel's `listening <url>` line it prints `timing <modulesMs> <createMs>`: milliseconds from
// process start until the gateway's modules were loaded, and how long createGateway took (store open, config,
// pipeline; the semantic index loads in the background after it).
import { parseArgs } from 'node:util';
import { createGateway } from '../src/gateway.js';
import { createLog } from '../src/log.js';
import { serveControl } from './serve-control.js';

const modulesMs = performance.now();
const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    upstream: { type: 'string', default: '' },
    'data-dir': { type: 'string', default: '' },
    'max-entries': { type: 'string', default: '1000000' },
    semantic: { type: 'string', default: 'on' },
  },
});
const dataDir = values['data-dir'];
if (!dataDir) throw new Error('--data-dir <dir> is required');
if (!values.upstream) throw new Error('--upstream <url> is required');

const started = performance.now();
const gateway = await createGateway({
  config: {
    providers: { openai: { base_url: `${values.upstream.replace(/\/+$/, '')}/v1`, api_key: 'sk-bench' } },
    settings: { data_dir: dataDir, metrics: { enabled: false } },
    cache: { mode: 'on', max_entries: Number(values['max-entries']), semantic: { enabled: values.semantic !== 'off' } },
  },
  env: {},
  log: createLog('silent'),
});
const createMs = performance.now() - started;
const url = await gateway.listen({ port: Number(values.port), host: '127.0.0.1' });
process.stdout.write(`timing ${modulesMs.toFixed(1)} ${createMs.toFixed(1)}\n`);
serveControl(url, () => gateway.close(1000));
