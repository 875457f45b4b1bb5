import { describe, expect, it } from 'vitest';
import { growthOfThirds, soakProblems, type IdleCounts } from '../soak/leak-verdict.js';
import type { ProcessSample } from '../soak/process-sampler.js';

const MB = 1024 * 1024;

function samples(anonMb: (i: number) => number, count = 30): ProcessSample[] {
  return Array.from({ length: count }, (_, i) => ({ atSec: i * 2, rssBytes: (anonMb(i) + 50) * MB, rssAnonBytes: anonMb(i) * MB, fds: 40, lagP99Ms: 5, handles: 10, resources: 12, heapUsedBytes: 80 * MB }));
}

const idle: IdleCounts = { fds: 40, handles: 10, heapUsedBytes: 70 * MB, rssAnonBytes: 360 * MB };
const limits = { rssGrowth: 0.1, retainedGrowth: 0.1, lagP99Ms: 50, idleSlack: 4 };
const clean = { traffic: [], churn: { applied: 4, failures: [] }, limits };

describe('soak leak verdict', () => {
  it('reads a garbage collector saw-tooth as no growth', () => {
    // 360 MB, climbing 40 MB between collections every 10 samples.
    const sawTooth = samples((i) => 360 + (i % 10) * 4);
    expect(Math.abs(growthOfThirds(sawTooth.map((s) => s.rssAnonBytes)))).toBeLessThan(0.02);
    expect(soakProblems({ samples: sawTooth, idleBefore: idle, idleAfter: idle, ...clean })).toEqual([]);
  });

  it('fails a steady climb, fds left open and retained heap growth', () => {
    const climbing = samples((i) => 360 + i * 2.5);
    const problems = soakProblems({
      samples: climbing,
      idleBefore: idle,
      idleAfter: { ...idle, fds: idle.fds + 20, heapUsedBytes: 90 * MB },
      ...clean,
    });
    expect(problems.some((p) => p.startsWith('anonymous RSS grew'))).toBe(true);
    expect(problems.some((p) => p.startsWith('open fds at idle'))).toBe(true);
    expect(problems.some((p) => p.startsWith('heap retained at idle'))).toBe(true);
  });

  it('fails a blocked event loop and unexpected answers', () => {
    const blocked = samples(() => 360).map((s) => ({ ...s, lagP99Ms: 120 }));
    const traffic = [{ byKind: {} as never, shed: 0, inFlight: 0, unexpected: ['json: status 500'], unexpectedTotal: 1 }];
    const problems = soakProblems({ samples: blocked, idleBefore: idle, idleAfter: idle, ...clean, traffic });
    expect(problems.some((p) => p.includes('event-loop lag'))).toBe(true);
    expect(problems.some((p) => p.includes('unexpected answers'))).toBe(true);
  });
});
