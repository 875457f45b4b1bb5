import { describe, expect, it } from 'vitest';
import { catalogModels } from '../../src/catalog/catalog.js';
import { warmModelPrices } from '../../src/catalog/warm-prices.js';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { configFileSchema } from '../../src/config/schema.js';

describe('pricing the model list ahead of need', () => {
  it('prices every catalogue model of the config between turns of the event loop, and stops when told', async () => {
    const config = resolveRuntimeConfig({ api: {}, file: configFileSchema.parse({}) }, {}, 1);
    const expected = [...config.providers.values()].reduce((sum, provider) => sum + catalogModels(provider.vendor).length, 0);
    expect(expected).toBeGreaterThan(1_000);

    // A timer set before the warm-up fires while it runs: it yields instead of holding the loop to the end.
    let timerFiredAt = -1;
    let priced = 0;
    setImmediate(() => (timerFiredAt = priced));
    const counting = warmModelPrices(config, () => false).then((count) => (priced = count));
    expect(await counting).toBe(expected);
    expect(timerFiredAt).toBe(0);

    // Stopped at its first yield: it gives up without going through the list (warm now, so it may finish first).
    const stopped = await warmModelPrices(config, () => true);
    expect(stopped).toBeLessThanOrEqual(expected);
  });
});
