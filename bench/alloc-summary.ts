// Reads an allocation sampling profile written by bench/alloc-profile.mjs (`npm run bench -- --alloc-profile`):
// bytes allocated per request by the functions that allocate the most, and per package or source area, so the
// garbage the collector's time comes from can be traced to the code that makes it.
//
//   npx tsx bench/alloc-summary.ts <file.heapprofile> [top]
// (the requests served while sampling are in the file's name, as bench/alloc-profile.mjs writes it)
import { readFileSync } from 'node:fs';

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Node[];
}

const [file, topArg] = process.argv.slice(2);
const requests = Number(/\.(\d+)req\.heapprofile$/.exec(file ?? '')?.[1] ?? NaN);
if (!file || !(requests > 0)) {
  console.error('usage: npx tsx bench/alloc-summary.ts <alloc-<script>.<pid>.<requests>req.heapprofile> [top]');
  process.exit(2);
}
const top = Number(topArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: Node };

const byFunction = new Map<string, number>();
const byArea = new Map<string, number>();
let total = 0;

/** A package name for node_modules files, the file for ours, `node:<module>` for Node's own. */
function area(url: string): string {
  const inModules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inModules) return inModules[1] as string;
  if (url.startsWith('node:')) return url.split('/')[0] as string;
  return url.replace(/^file:\/\/.*?\/(dist|src|bench)\//, '$1/') || '(native / VM)';
}

function walk(node: Node): void {
  if (node.selfSize > 0) {
    const { functionName, url, lineNumber } = node.callFrame;
    const name = `${functionName || '(anonymous)'} ${url.split('/').pop() ?? ''}:${lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize);
    byArea.set(area(url), (byArea.get(area(url)) ?? 0) + node.selfSize);
    total += node.selfSize;
  }
  for (const child of node.children) walk(child);
}
walk(profile.head);

const perRequest = (bytes: number): string => `${(bytes / requests / 1024).toFixed(2)} KiB`;
console.log(`sampled allocations: ${(total / 1024 / 1024).toFixed(1)} MiB in all, ${perRequest(total)} per request (${requests} requests)\n`);
console.log('| area | per request | share |\n| --- | ---: | ---: |');
for (const [name, bytes] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`| ${name} | ${perRequest(bytes)} | ${((bytes / total) * 100).toFixed(1)}% |`);
console.log('\n| function | per request | share |\n| --- | ---: | ---: |');
for (const [name, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`| ${name} | ${perRequest(bytes)} | ${((bytes / total) * 100).toFixed(1)}% |`);
