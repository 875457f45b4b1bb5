// The catalogue price lookups a keyed request makes: the budget's reservation asks unitPrices for the plan's target,
// and the charge asks costOf, for a model the catalogue prices (openai/gpt-4o-mini), in a loop. Prints ns per request
// (one of each), six rounds of 500,000. Figures only; run it on two builds to compare.
//
//   npx tsx bench/price-lookup.ts
import { costOf, unitPrices } from '../src/catalog/prices.js';
import { resolveRuntimeConfig } from '../src/config/runtime.js';

const config = resolveRuntimeConfig({ api: {}, file: { providers: { openai: { base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-bench' } } } }, {}, 0);
const provider = config.providers.get('openai');
if (!provider) throw new Error('no openai provider');
const usage = { input_tokens: 14, output_tokens: 4, cache_read_tokens: 0, cache_write_tokens: 0 };

let sink: unknown;
function loop(requests: number): number {
  const started = process.cpuUsage();
  for (let i = 0; i < requests; i++) {
    sink = unitPrices(provider as NonNullable<typeof provider>, 'gpt-4o-mini');
    sink = costOf(provider as NonNullable<typeof provider>, 'gpt-4o-mini', usage);
  }
  const used = process.cpuUsage(started);
  return ((used.user + used.system) / requests) * 1000;
}

loop(100_000);
const rounds: string[] = [];
for (let round = 0; round < 6; round++) rounds.push(loop(500_000).toFixed(0));
console.log(`ns a request (unitPrices and costOf): ${rounds.join(', ')}`);
if (sink === undefined) console.log('');
