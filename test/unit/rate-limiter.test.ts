import { describe, expect, it } from 'vitest';
import { SlidingWindowLimiter } from '../../src/governance/rate-limiter.js';

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('SlidingWindowLimiter', () => {
  it('allows exactly the limit within a minute, then again once the window slides', () => {
    const c = clock();
    const limiter = new SlidingWindowLimiter(60_000, c.now);
    for (let i = 0; i < 10; i++) {
      const { allowed, state } = limiter.tryTake('k', 10);
      expect(allowed).toBe(true);
      expect(state.remaining).toBe(9 - i);
      c.advance(100);
    }
    c.advance(58_000); // 59 s after the first take
    const refused = limiter.tryTake('k', 10);
    expect(refused.allowed).toBe(false);
    expect(refused.state.remaining).toBe(0);
    // All ten were taken within one slot of the window: they leave together, 60 s after the last one.
    expect(refused.state.resetMs).toBe(60_000 - 58_000 - 100);
    c.advance(refused.state.resetMs - 1);
    expect(limiter.tryTake('k', 10).allowed).toBe(false);
    c.advance(1);
    for (let i = 0; i < 10; i++) expect(limiter.tryTake('k', 10).allowed).toBe(true);
    expect(limiter.tryTake('k', 10).allowed).toBe(false);
  });

  it('slides: takes spread over the minute free up one by one', () => {
    const c = clock();
    const limiter = new SlidingWindowLimiter(60_000, c.now);
    for (let i = 0; i < 5; i++) {
      expect(limiter.tryTake('k', 5).allowed).toBe(true);
      c.advance(10_000);
    }
    // t = 50 s: full; the first take (t = 0) leaves at 60 s.
    const refused = limiter.tryTake('k', 5);
    expect(refused.allowed).toBe(false);
    expect(refused.state.resetMs).toBe(10_000);
    expect(refused.state.fullResetMs).toBe(50_000);
    c.advance(10_000);
    expect(limiter.tryTake('k', 5).allowed).toBe(true);
    expect(limiter.tryTake('k', 5).allowed).toBe(false);
    c.advance(10_000);
    expect(limiter.tryTake('k', 5).allowed).toBe(true);
  });

  it('never lets more than the limit through in any rolling window', () => {
    const c = clock();
    const limiter = new SlidingWindowLimiter(60_000, c.now);
    const granted: number[] = [];
    for (let step = 0; step < 3000; step++) {
      if (limiter.tryTake('k', 20).allowed) granted.push(c.now());
      c.advance(37 + (step % 11) * 13);
    }
    for (let i = 0; i < granted.length; i++) {
      const inWindow = granted.filter((t) => t > (granted[i] as number) - 60_000 && t <= (granted[i] as number)).length;
      expect(inWindow).toBeLessThanOrEqual(20);
    }
    // And it is not needlessly strict: about 20 a minute over the run.
    const minutes = (c.now() - 1_000_000) / 60_000;
    expect(granted.length).toBeGreaterThan(19 * minutes - 20);
  });

  it('counts amounts (tokens), takes nothing when refused, and add() may exceed the limit', () => {
    const c = clock();
    const limiter = new SlidingWindowLimiter(60_000, c.now);
    expect(limiter.tryTake('t', 1000, 600).allowed).toBe(true);
    const refused = limiter.tryTake('t', 1000, 500);
    expect(refused.allowed).toBe(false);
    expect(refused.state.remaining).toBe(400);
    expect(refused.state.resetMs).toBe(60_000);
    expect(limiter.tryTake('t', 1000, 400).allowed).toBe(true);
    c.advance(30_000);
    limiter.add('t', 5000);
    const state = limiter.state('t', 1000);
    expect(state.remaining).toBe(0);
    // The 1000 from t = 0 leave at 60 s, the 5000 added at 30 s leave at 90 s; only then is there room.
    expect(state.resetMs).toBe(60_000);
    expect(state.fullResetMs).toBe(60_000);
    c.advance(60_000);
    expect(limiter.state('t', 1000)).toEqual({ limit: 1000, remaining: 1000, resetMs: 0, fullResetMs: 0 });
  });

  it('states a fresh key as full, and resets for a unit that can never fit', () => {
    const c = clock();
    const limiter = new SlidingWindowLimiter(60_000, c.now);
    expect(limiter.state('new', 10)).toEqual({ limit: 10, remaining: 10, resetMs: 0, fullResetMs: 0 });
    const tooBig = limiter.tryTake('new', 10, 11);
    expect(tooBig.allowed).toBe(false);
    expect(tooBig.state.resetMs).toBe(60_000);
    expect(limiter.tryTake('zero', 0).allowed).toBe(false);
  });

  it('takes under several limits at once, or under none', () => {
    const c = clock();
    const limiter = new SlidingWindowLimiter(60_000, c.now);
    expect(limiter.tryTakeAll([{ key: 'key', limit: 10 }, { key: 'key:model', limit: 1 }]).allowed).toBe(true);
    const refused = limiter.tryTakeAll([{ key: 'key', limit: 10 }, { key: 'key:model', limit: 1 }]);
    expect(refused.allowed).toBe(false);
    expect(refused.blocked).toBe(1);
    expect(limiter.state('key', 10).remaining).toBe(9);
    expect(refused.states[1]?.resetMs).toBe(60_000);
  });

  it('keeps memory bounded per key and sweeps idle keys', () => {
    const c = clock();
    const limiter = new SlidingWindowLimiter(60_000, c.now);
    for (let i = 0; i < 100_000; i++) {
      limiter.add('busy', 1);
      c.advance(7);
    }
    const busy = (limiter as unknown as { windows: Map<string, { times: number[] }> }).windows.get('busy');
    expect(busy?.times.length).toBeLessThanOrEqual(62 + 32);
    for (let i = 0; i < 5000; i++) limiter.tryTake(`idle-${i}`, 5);
    expect(limiter.size).toBeGreaterThan(5000);
    c.advance(121_000);
    for (let i = 0; i < 1100; i++) limiter.tryTake('live', 1_000_000);
    expect(limiter.size).toBe(1);
  });
});

describe('SlidingWindowLimiter holds', () => {
  it('counts what is held against the limit until released, on every entry or none', () => {
    const c = clock();
    const limiter = new SlidingWindowLimiter(60_000, c.now);
    const first = limiter.tryHoldAll([{ key: 'k', limit: 1000, amount: 600 }, { key: 't', limit: 5000, amount: 600 }]);
    expect(first.allowed).toBe(true);
    expect(first.states.map((state) => state.remaining)).toEqual([400, 4400]);
    // What is held is used some time from now, and leaves a window after that.
    expect(first.states[0]?.fullResetMs).toBe(60_000);
    // The key's window cannot take another 600; the team's is left as it was.
    const refused = limiter.tryHoldAll([{ key: 'k', limit: 1000, amount: 600 }, { key: 't', limit: 5000, amount: 600 }]);
    expect(refused).toMatchObject({ allowed: false, blocked: 0 });
    expect(limiter.state('t', 5000).remaining).toBe(4400);
    // Holds do not age out: a minute later the first is still held.
    c.advance(61_000);
    expect(limiter.tryHoldAll([{ key: 'k', limit: 1000, amount: 600 }]).allowed).toBe(false);
    // Released and replaced by what was used, the window ages that out as usual.
    first.release();
    first.release();
    limiter.add('k', 700);
    expect(limiter.state('k', 1000).remaining).toBe(300);
    expect(limiter.state('t', 5000).remaining).toBe(5000);
    const waiting = limiter.tryHoldAll([{ key: 'k', limit: 1000, amount: 600 }]);
    expect(waiting.allowed).toBe(false);
    expect(waiting.states[0]?.resetMs).toBe(60_000);
    c.advance(60_000);
    expect(limiter.tryHoldAll([{ key: 'k', limit: 1000, amount: 600 }]).allowed).toBe(true);
  });

  it('keeps a window that holds for work in flight through sweeps', () => {
    const c = clock();
    const limiter = new SlidingWindowLimiter(60_000, c.now);
    const held = limiter.tryHoldAll([{ key: 'k', limit: 100, amount: 100 }]);
    c.advance(10 * 60_000);
    limiter.sweep();
    expect(limiter.tryHoldAll([{ key: 'k', limit: 100, amount: 1 }]).allowed).toBe(false);
    held.release();
    expect(limiter.tryHoldAll([{ key: 'k', limit: 100, amount: 1 }]).allowed).toBe(true);
  });
});
