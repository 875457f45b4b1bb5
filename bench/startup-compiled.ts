import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Start-up time and memory of the three ways to run tollgate, side by side: the TypeScript sources through tsx
 * (`node --import tsx src/main.ts`, how the tests run it), the compiled build (`node dist/cli.js`, what
 * `npm start` runs) and the single binary (`dist-bin/tollgate`). Each run starts on zero config with an empty data
 * directory and is timed from spawn to the first 200 on /health; RSS is read from /proc once it answers.
 *
 *   npm run build && npm run build:binary && npm run bench:startup-compiled [-- --runs 7]
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg === -1 ? 5 : Number(process.argv[runsArg + 1]);

interface Mode {
  name: string;
  command: string;
  args: string[];
}

const MODES: Mode[] = [
  { name: 'tsx (src/main.ts)', command: process.execPath, args: ['--import', pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href, join(ROOT, 'src/main.ts')] },
  { name: 'compiled (dist/cli.js)', command: process.execPath, args: [join(ROOT, 'dist/cli.js')] },
  { name: 'binary (dist-bin/tollgate)', command: join(ROOT, 'dist-bin/tollgate'), args: [] },
];

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((row) => row.startsWith('VmRSS:'));
  return Number(line?.match(/(\d+)/)?.[1] ?? 0) / 1024;
}

async function once(mode: Mode): Promise<{ ms: number; rss: number }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-startup-'));
  const started = performance.now();
  const child = spawn(mode.command, [...mode.args, '--port', String(port), '--host', '127.0.0.1'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: dir, TOLLGATE_DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${mode.name} exited before answering /health`);
      if (performance.now() - started > 30_000) throw new Error(`${mode.name}: no 200 on /health within 30 s`);
      if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status === 200, () => false)) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const ms = performance.now() - started;
    // A moment for the start-up's garbage to settle, as a server's memory would before its first real request.
    await new Promise((resolve) => setTimeout(resolve, 500));
    return { ms, rss: rssMb(child.pid ?? 0) };
  } finally {
    child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

const rows: string[][] = [];
for (const mode of MODES) {
  if (mode.command !== process.execPath && !existsSync(mode.command)) {
    rows.push([mode.name, 'not built (npm run build:binary)', '', '']);
    continue;
  }
  if (mode.args.some((arg) => arg.endsWith('dist/cli.js')) && !existsSync(join(ROOT, 'dist/cli.js'))) {
    rows.push([mode.name, 'not built (npm run build)', '', '']);
    continue;
  }
  const results = [];
  await once(mode); // warm the file cache, so every mode is measured warm
  for (let run = 0; run < RUNS; run++) results.push(await once(mode));
  const times = results.map((result) => result.ms);
  rows.push([mode.name, `${median(times).toFixed(0)} ms`, `${Math.min(...times).toFixed(0)}-${Math.max(...times).toFixed(0)} ms`, `${median(results.map((result) => result.rss)).toFixed(0)} MB`]);
}

const header = ['mode', 'to first 200 on /health (median)', 'range', 'RSS after start (median)'];
const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)));
const line = (cells: string[]): string => `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(' | ')} |`;
console.log(`tollgate start-up, ${RUNS} runs each (node ${process.version}, ${process.platform}-${process.arch})\n`);
console.log(line(header));
console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
for (const row of rows) console.log(line(row));
