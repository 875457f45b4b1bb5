import type { RuntimeConfig } from '../core/config.js';
import { catalogModels } from './catalog.js';
import { unitPrices } from './prices.js';

/** How long one slice may hold the event loop before it yields to requests. */
const SLICE_MS = 4;

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Prices every catalogue model of the config's providers ahead of need, a few milliseconds at a time between
 * requests. The model list (`GET /v1/models`, `/api/models`, the dashboard) prices all of its 1,000+ models when it is
 * first built, 0.2 ms each: done on the first call, that held the event loop, and every request on it, for a quarter
 * of a second. The prices are kept per (catalogue, model) for the life of the process, so a config change warms
 * only what it adds. Resolves with how many models were priced; stops early when `stopped()` says so.
 */
export async function warmModelPrices(config: RuntimeConfig, stopped: () => boolean): Promise<number> {
  let priced = 0;
  let sliceStart = performance.now();
  for (const provider of config.providers.values()) {
    for (const model of catalogModels(provider.vendor)) {
      if (performance.now() - sliceStart >= SLICE_MS) {
        await yieldToLoop();
        if (stopped()) return priced;
        sliceStart = performance.now();
      }
      unitPrices(provider, model.id);
      priced++;
    }
  }
  return priced;
}
