// The long soak: a real gateway process with everything on (virtual key with rate limit and budget, cache with its
// semantic tier, guardrails, request logs, metrics) under a steady mixed load (streams and not, streams the client
// cancels, upstream failures, guardrail blocks), its config changed every minute through the API and the watched
// file. Prints a row per sample and a summary; the short pass/fail form is test/e2e/soak.test.ts.
//
//   npm run bench:soak -- [--duration 600] [--warmup 30] [--rate 40] [--sample-every 10] [--churn-every 60]
import { parseArgs } from 'node:util';
import { mb, soakFigures, soakProblems } from '../test/soak/leak-verdict.js';
import type { ProcessSample } from '../test/soak/process-sampler.js';
import { runSoak } from '../test/soak/run-soak.js';
import type { TrafficReport } from '../test/soak/traffic.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '600' },
    warmup: { type: 'string', default: '30' },
    rate: { type: 'string', default: '40' },
    'max-in-flight': { type: 'string', default: '64' },
    'sample-every': { type: 'string', default: '10' },
    'churn-every': { type: 'string', default: '60' },
  },
});
const options = {
  durationSec: Number(values.duration),
  warmupSec: Number(values.warmup),
  rate: Number(values.rate),
  maxInFlight: Number(values['max-in-flight']),
  sampleEverySec: Number(values['sample-every']),
  churnEverySec: Number(values['churn-every']),
};

const row = (cells: Array<string | number>): string => `| ${cells.join(' | ')} |`;
console.log(`soak: ${options.durationSec} s after a ${options.warmupSec} s warm-up, ${options.rate} req/s offered, config change every ${options.churnEverySec} s\n`);
console.log(row(['t s', 'RSS', 'anon RSS', 'heap used', 'lag p99 ms', 'fds', 'handles', 'resources', 'requests sent', 'in flight', 'shed', 'unexpected']));
console.log(row(['---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']));
const printSample = (s: ProcessSample, traffic: TrafficReport): void => {
  const sent = Object.values(traffic.byKind).reduce((n, k) => n + k.sent, 0);
  console.log(row([s.atSec.toFixed(0), mb(s.rssBytes), mb(s.rssAnonBytes), mb(s.heapUsedBytes), s.lagP99Ms.toFixed(1), s.fds, s.handles, s.resources, sent, traffic.inFlight, traffic.shed, traffic.unexpectedTotal]));
};

const result = await runSoak({ ...options, onSample: printSample });
const figures = soakFigures(result.samples);
const first = result.samples[0];
const last = result.samples.at(-1);
const sent = Object.values(result.load.byKind).reduce((n, k) => n + k.sent, 0);

console.log('\n## Summary\n');
console.log(`- requests: ${sent} in ${options.durationSec} s (${(sent / options.durationSec).toFixed(1)}/s); shed (over ${options.maxInFlight} in flight): ${result.load.shed}`);
for (const [kind, counts] of Object.entries(result.load.byKind)) console.log(`  - ${kind}: ${counts.sent} sent, ${counts.asExpected} as expected, ${counts.unexpected} unexpected`);
console.log(`- RSS: ${first ? mb(first.rssBytes) : 'n/a'} at the first sample after warm-up, ${last ? mb(last.rssBytes) : 'n/a'} at the end`);
console.log(`- anonymous RSS (medians of first and last thirds): ${mb(figures.rssFirstThirdBytes)} -> ${mb(figures.rssLastThirdBytes)} (${(figures.rssGrowth * 100).toFixed(1)}%); linear fit ${figures.rssSlopePctPerMin.toFixed(2)}%/min`);
console.log(`- retained at idle after a full GC: heap ${mb(result.idleBefore.heapUsedBytes)} -> ${mb(result.idleAfter.heapUsedBytes)}, anonymous RSS ${mb(result.idleBefore.rssAnonBytes)} -> ${mb(result.idleAfter.rssAnonBytes)}`);
console.log(`- event-loop lag p99 (per ${options.sampleEverySec} s interval, beyond the 10 ms sampling interval): median ${figures.lagP99MedianMs.toFixed(1)} ms, max ${figures.lagP99MaxMs.toFixed(1)} ms`);
console.log(`- idle fds / handles: ${result.idleBefore.fds} / ${result.idleBefore.handles} after warm-up, ${result.idleAfter.fds} / ${result.idleAfter.handles} after the load`);
console.log(`- config changes applied: ${result.churn.applied}, failed: ${result.churn.failures.length}`);
for (const line of [...result.warmup.unexpected, ...result.load.unexpected].slice(0, 10)) console.log(`  - ${line}`);
console.log(`- warm-up: ${result.warmup.unexpectedTotal} unexpected; load: ${result.load.unexpectedTotal} unexpected; sample failures: ${result.sampleFailures.length}`);
const problems = soakProblems({
  samples: result.samples,
  idleBefore: result.idleBefore,
  idleAfter: result.idleAfter,
  traffic: [result.warmup, result.load],
  churn: result.churn,
  limits: { rssGrowth: 0.1, retainedGrowth: 0.1, lagP99Ms: 50, idleSlack: 4 },
});
console.log(problems.length === 0 ? '\nno leak trend, no blocked loop, no unexpected answer' : `\nPROBLEMS:\n${problems.map((p) => `- ${p}`).join('\n')}`);
