import { describe, expect, it } from 'vitest';
import { StageTimeline } from '../../src/core/stage-timeline.js';

describe('StageTimeline', () => {
  it('nests runs as they start inside the ones still going', () => {
    const timeline = new StageTimeline();
    const auth = timeline.started('auth', 1);
    const spend = timeline.started('spend', 2);
    timeline.ended(spend, 3, 'passed');
    const call = timeline.started('call', 4);
    expect(timeline.parents.slice(0, timeline.length)).toEqual([-1, auth, auth]);
    expect(timeline.innermostRunning()).toBe(call);
    expect(timeline.allEnded()).toBe(false);
    timeline.ended(call, 5, 'answered');
    timeline.ended(auth, 6, 'passed');
    expect(timeline.allEnded()).toBe(true);
  });

  it('is empty after a reset, keeps nothing of the request before, and records the next one from the start', () => {
    const timeline = new StageTimeline();
    const failure = new Error('upstream down');
    for (const name of ['auth', 'route', 'call']) timeline.started(name, 1);
    timeline.ended(2, 2, 'failed', failure);
    timeline.ended(1, 3, 'failed', failure);
    timeline.ended(0, 4, 'failed', failure);
    timeline.reset();
    expect(timeline.length).toBe(0);
    expect(timeline.innermostRunning()).toBe(-1);
    expect(timeline.errors).not.toContain(failure);
    const auth = timeline.started('auth', 10);
    expect(auth).toBe(0);
    expect(timeline.length).toBe(1);
    // The old runs beyond the new length do not count as running nor as parents.
    expect(timeline.parents[0]).toBe(-1);
    expect(timeline.innermostRunning()).toBe(0);
    expect(timeline.outcomes[0]).toBeNull();
    expect(timeline.errors[0]).toBeUndefined();
  });
});
