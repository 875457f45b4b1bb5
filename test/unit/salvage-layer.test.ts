import { describe, expect, it } from 'vitest';
import { salvageLayer } from '../../src/config/salvage-layer.js';

describe('salvageLayer', () => {
  it('leaves out only the refused parts: a route, a routing rule among others, an unknown key', () => {
    const result = salvageLayer({
      providers: { lab: { type: 'openai', base_url: 'http://127.0.0.1:9/v1' } },
      routes: { good: { targets: [{ model: 'lab/m' }] }, bad: { targets: 'nope' } },
      routing_rules: [
        { when: { metadata: { tier: 'batch' } }, route_to: 'good' },
        { when: 42, route_to: 'good' },
        { when: { metadata: { tier: 'free' } }, route_to: 'good' },
      ],
      from_the_future: { anything: true },
    });
    expect(Object.keys(result?.document.routes ?? {})).toEqual(['good']);
    expect(result?.document.providers?.lab).toBeDefined();
    expect(result?.document.routing_rules?.map((rule) => rule.when)).toEqual([{ metadata: { tier: 'batch' } }, { metadata: { tier: 'free' } }]);
    expect(result?.dropped.map((line) => line.split(':')[0])).toEqual(expect.arrayContaining(['routes.bad.targets', 'routing_rules[1]', 'from_the_future']));
  });

  it('gives up (null) when what is left still does not pass, and when nothing was wrong', () => {
    expect(salvageLayer({ routes: { good: { targets: [{ model: 'lab/m' }] } } })).toBeNull();
  });
});
