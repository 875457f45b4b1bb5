// Summarises a V8 .cpuprofile (as written by `npm run bench:overhead -- --profile`): the functions with the
// most self time, and self time per package / source area, so the gateway's hot path can be read at a
// glance without opening DevTools. Usage: npx tsx bench/profile-summary.ts bench/profiles/<file>.cpuprofile [top]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [top]');
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

/** Groups a script URL into something readable: a package name, a src/ area, or node internals. */
function area(url: string): string {
  if (!url) return '(native / VM)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] ?? url;
  if (url.startsWith('node:')) return url.replace(/^node:(internal\/)?([^/]+).*$/, 'node:$2');
  const src = /\/(src|bench|pipelines|test)\/(.*?)(\/[^/]*)?$/.exec(url);
  if (src) return `${src[1]}/${src[3] ? src[2] : (src[2] ?? '').replace(/\.ts$/, '')}`;
  return url;
}

const fnTotals = new Map<string, number>();
const areaTotals = new Map<string, number>();
let total = 0;
for (const [id, us] of selfUs) {
  const frame = byId.get(id)?.callFrame;
  // Idle time is when the other targets were being measured; it says nothing about the hot path.
  if (!frame || frame.functionName === '(idle)') continue;
  total += us;
  const short = frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(src|bench|pipelines|test)\//, '$1/');
  const key = `${frame.functionName || '(anonymous)'}  ${short}:${frame.lineNumber + 1}`;
  fnTotals.set(key, (fnTotals.get(key) ?? 0) + us);
  areaTotals.set(area(frame.url), (areaTotals.get(area(frame.url)) ?? 0) + us);
}

const pct = (us: number): string => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
const sortDesc = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]);
console.log(`total sampled: ${(total / 1e6).toFixed(2)} s`);
console.log('\nself time by area:');
for (const [name, us] of sortDesc(areaTotals).slice(0, top)) console.log(`  ${pct(us)}  ${name}`);
console.log('\ntop functions by self time:');
for (const [name, us] of sortDesc(fnTotals).slice(0, top)) console.log(`  ${pct(us)}  ${name}`);
