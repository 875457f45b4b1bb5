// Synthetic sentence-embedding-like vectors for the cache benches: clustered unit vectors (centres plus noise,
// normalised), because prompts to one application cluster by topic. Deterministic, so every run measures the same data.

/** Length of the noise added to a centre (centres are unit length) to make a stored vector. */
export const CLUSTER_NOISE = 0.6;
/** Length of the noise that turns a stored vector into a reworded prompt's: cosine to its source about 0.98. */
export const QUERY_NOISE = 0.2;

/** A deterministic PRNG (mulberry32) with Box-Muller for normal draws. */
export function randomSource(seed: number): { uniform: () => number; gaussian: () => number } {
  let state = seed >>> 0;
  const uniform = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return { uniform, gaussian: () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform()) };
}

/** Scales a vector to unit length, in place. */
export function normalise(vector: Float32Array): Float32Array {
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

/** base + noise of the given expected length, normalised. */
export function perturbed(base: Float32Array, noiseLength: number, gaussian: () => number): Float32Array {
  const sigma = noiseLength / Math.sqrt(base.length);
  return normalise(base.map((value) => value + gaussian() * sigma));
}
