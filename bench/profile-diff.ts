// Compares two V8 .cpuprofile files per request: for every function, its inclusive time (itself and what it
// calls, each sample counted once per function even under recursion) divided by the requests each process
// served, and the difference. Shows where a variant's extra CPU per request goes (e.g. the traced gateway of
// `npm run bench:observability -- --profile` against the metrics-only one).
//
//   npx tsx bench/profile-diff.ts <base.cpuprofile> <base requests> <variant.cpuprofile> <variant requests> [top] [--self]
// (`--self`: each function's own time only, without what it calls; `--skip-ms N`: leave out the first N ms of each
// profile, the process's start-up, which would otherwise be spread over the requests.)
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A function's name with its file and line, short enough for a table. */
function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.replace(/^.*\/(node_modules\/)?/, (_, pkg: string | undefined) => (pkg ? 'npm:' : '')).replace(/^file:\/\//, '');
  return `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
}

/** Inclusive microseconds per function label, and the total sampled time. */
function inclusive(file: string, selfOnly: boolean, skipMs: number): { byLabel: Map<string, number>; total: number } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const selfUs = new Map<number, number>();
  let total = 0;
  let elapsed = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    elapsed += delta;
    if (elapsed < skipMs * 1000) return;
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
    total += delta;
  });
  const byLabel = new Map<string, number>();
  for (const [id, micros] of selfUs) {
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const node = byId.get(at);
      if (!node) break;
      const name = label(node);
      if (seen.has(name)) continue;
      seen.add(name);
      byLabel.set(name, (byLabel.get(name) ?? 0) + micros);
      if (selfOnly) break;
    }
  }
  return { byLabel, total };
}

const { values: flags, positionals } = parseArgs({ allowPositionals: true, options: { self: { type: 'boolean', default: false }, 'skip-ms': { type: 'string', default: '0' } } });
const selfOnly = flags.self;
const skipMs = Number(flags['skip-ms']);
const [baseFile, baseRequestsArg, variantFile, variantRequestsArg, topArg] = positionals;
if (!baseFile || !baseRequestsArg || !variantFile || !variantRequestsArg) {
  throw new Error('usage: profile-diff.ts <base.cpuprofile> <base requests> <variant.cpuprofile> <variant requests> [top] [--self] [--skip-ms N]');
}
const top = Number(topArg ?? 40);
const base = inclusive(baseFile, selfOnly, skipMs);
const variant = inclusive(variantFile, selfOnly, skipMs);
const baseRequests = Number(baseRequestsArg);
const variantRequests = Number(variantRequestsArg);
const rows = new Set([...base.byLabel.keys(), ...variant.byLabel.keys()]);
const diffs = [...rows].map((name) => {
  const b = (base.byLabel.get(name) ?? 0) / baseRequests;
  const v = (variant.byLabel.get(name) ?? 0) / variantRequests;
  return { name, b, v, d: v - b };
});
diffs.sort((x, y) => Math.abs(y.d) - Math.abs(x.d));
console.log(`sampled time per request: base ${(base.total / baseRequests).toFixed(1)} µs, variant ${(variant.total / variantRequests).toFixed(1)} µs`);
console.log('| function | base µs/req | variant µs/req | difference |');
console.log('| --- | ---: | ---: | ---: |');
for (const row of diffs.slice(0, top)) console.log(`| ${row.name} | ${row.b.toFixed(2)} | ${row.v.toFixed(2)} | ${row.d >= 0 ? '+' : ''}${row.d.toFixed(2)} |`);
