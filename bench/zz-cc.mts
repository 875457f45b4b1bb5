import { CountCache, countKey } from '../src/tokens/count-cache.js';
const c = new CountCache(50_000);
let i = 0;
const keys: string[] = [];
for (let k = 0; k < 1_000_000; k++) keys.push(countKey('hello there, how are you today? request number ' + k));
for (let r = 0; r < 5; r++) {
  let t = performance.now(); const n = 200_000;
  for (let k = 0; k < n; k++) { const key = keys[i++]!; if (c.get(key) === undefined) c.set(key, 12); }
  const missSet = (performance.now() - t) * 1000 / n;
  t = performance.now();
  for (let k = 0; k < n; k++) { c.get('fixed answer text'); c.set('fixed answer text', 3); }
  const hit = (performance.now() - t) * 1000 / n;
  t = performance.now();
  for (let k = 0; k < n; k++) countKey('hello there, how are you today? request number ' + k);
  const h = (performance.now() - t) * 1000 / n;
  console.log(`miss+set ${missSet.toFixed(3)} µs, hit ${hit.toFixed(3)} µs, key ${h.toFixed(3)} µs`);
}
