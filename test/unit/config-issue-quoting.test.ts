import { describe, expect, it } from 'vitest';
import { configFileSchema, describeIssues } from '../../src/config/schema.js';

/** A config error names where the problem is without echoing a huge client-sent key or value whole. */
describe('config error messages', () => {
  it('quote a long key in the path and a long message bounded', () => {
    const name = 'x'.repeat(100_000);
    const result = configFileSchema.safeParse({ providers: { [name]: { base_url: 5 } } });
    expect(result.success).toBe(false);
    const message = describeIssues(result.error!);
    expect(message.length).toBeLessThan(2_000);
    expect(message).toContain('providers.xxxx');
    expect(message).toContain('(100000 characters)');
  });

  it('leave ordinary paths as they were', () => {
    const result = configFileSchema.safeParse({ providers: { openai: { base_url: 5 } } });
    expect(describeIssues(result.error!)).toMatch(/^providers\.openai/);
  });
});
