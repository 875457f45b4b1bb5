import { describe, expect, it } from 'vitest';
import { withFields } from '../../src/core/with-fields.js';

describe('withFields', () => {
  it('copies the source with the fields added or replaced, in the source order then the new fields', () => {
    const source = { id: 'c', model: 'm', choices: [1] };
    const copy = withFields(source, { choices: [], usage: null });
    expect(copy).toEqual({ id: 'c', model: 'm', choices: [], usage: null });
    expect(Object.keys(copy)).toEqual(['id', 'model', 'choices', 'usage']);
    // The source is left as it was.
    expect(source).toEqual({ id: 'c', model: 'm', choices: [1] });
    expect(copy).not.toBe(source);
  });
});
