// Calibrates the semantic cache: embeds every labelled pair of test/fixtures/cache-calibration.json with the USE
// lite embedder and prints, for thresholds 0.60 to 0.95, the precision and recall of "cosine >= threshold" alone
// and with the lexical guard, the false hits by kind, and the recommended default threshold. Figures, not pass/fail.
//
//   npx tsx bench/cache-calibration.ts [--verbose]   (--verbose lists the false hits and misses at the default)
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createUseLiteEmbedder } from '../src/cache/embedding/use-lite.js';
import { textsLexicallyCompatible } from '../src/cache/lexical-guard.js';

interface LabelledPair {
  a: string;
  b: string;
  same: boolean;
  kind: string;
}

interface ScoredPair extends LabelledPair {
  cosine: number;
  guardAllows: boolean;
}

interface Outcome {
  precision: number | undefined;
  recall: number;
  hits: number;
  falseHitsByKind: Map<string, number>;
}

const { values } = parseArgs({ options: { verbose: { type: 'boolean', default: false } } });
const THRESHOLDS = Array.from({ length: 8 }, (_, i) => Math.round((0.6 + i * 0.05) * 100) / 100);

const pairs = JSON.parse(readFileSync(new URL('../test/fixtures/cache-calibration.json', import.meta.url), 'utf8')) as LabelledPair[];
const scored = await scorePairs(pairs);
const positives = scored.filter((pair) => pair.same).length;

console.log('### Semantic cache calibration (USE lite)\n');
console.log(
  `${scored.length} labelled pairs (test/fixtures/cache-calibration.json): ${positives} same, ` +
    `${scored.length - positives} different (${describeKinds(scored.filter((pair) => !pair.same))}). ` +
    'A hit is "cosine >= threshold" (and, with the guard, `lexicallyCompatible`). ' +
    'Precision = right hits / hits; recall = right hits / pairs that should hit.\n',
);
console.log(cosineByKind(scored));
console.log('| threshold | cosine: precision | recall | false hits (by kind) | + guard: precision | recall | false hits (by kind) |');
console.log('|---|---|---|---|---|---|---|');
// The lowest threshold with the best precision the guard reaches (1.0 if any threshold reaches it): precision first.
let recommended: { threshold: number; outcome: Outcome } | undefined;
for (const threshold of THRESHOLDS) {
  const alone = evaluate(scored, (pair) => pair.cosine >= threshold);
  const guarded = evaluate(scored, (pair) => pair.cosine >= threshold && pair.guardAllows);
  if ((guarded.precision ?? 0) > (recommended?.outcome.precision ?? 0)) recommended = { threshold, outcome: guarded };
  console.log(`| ${threshold.toFixed(2)} | ${cells(alone)} | ${cells(guarded)} |`);
}
const guardAlone = evaluate(scored, (pair) => pair.guardAllows);
console.log(`| (guard alone) | | | | ${cells(guardAlone)} |`);
console.log();
if (recommended) {
  const { threshold, outcome } = recommended;
  const perfect = outcome.precision === 1;
  console.log(
    `Recommended default: **${threshold.toFixed(2)}** with the lexical guard, the lowest threshold with ` +
      `${perfect ? 'precision 1.0' : 'the best precision'} on this set: precision ${format(outcome.precision)}, ` +
      `recall ${format(outcome.recall)} (${outcome.hits} of ${positives} same pairs served from cache).`,
  );
  const falseHits = scored.filter((pair) => !pair.same && pair.cosine >= threshold && pair.guardAllows);
  if (falseHits.length > 0) {
    console.log('\nNo threshold reaches precision 1.0; what still passes there:');
    for (const pair of falseHits) console.log(`- ${pair.kind}, cosine ${pair.cosine.toFixed(3)}: "${pair.a}" / "${pair.b}"`);
  }
} else {
  console.log('No threshold serves a right hit with the guard on this set: do not enable the semantic tier by default.');
}
if (values.verbose) printMistakes(scored, recommended?.threshold ?? 0.95);

async function scorePairs(labelled: LabelledPair[]): Promise<ScoredPair[]> {
  const texts = [...new Set(labelled.flatMap((pair) => [pair.a, pair.b]))];
  const embedder = createUseLiteEmbedder({ maxQueue: texts.length });
  try {
    const vectors = await embedder.embed(texts);
    const vectorOf = new Map(texts.map((text, i) => [text, vectors[i]!]));
    return labelled.map((pair) => ({
      ...pair,
      cosine: dot(vectorOf.get(pair.a)!, vectorOf.get(pair.b)!),
      guardAllows: textsLexicallyCompatible(pair.a, pair.b),
    }));
  } finally {
    await embedder.close();
  }
}

function evaluate(all: ScoredPair[], hits: (pair: ScoredPair) => boolean): Outcome {
  const served = all.filter(hits);
  const right = served.filter((pair) => pair.same).length;
  const falseHitsByKind = new Map<string, number>();
  for (const pair of served) if (!pair.same) falseHitsByKind.set(pair.kind, (falseHitsByKind.get(pair.kind) ?? 0) + 1);
  return {
    precision: served.length === 0 ? undefined : right / served.length,
    recall: positives === 0 ? 0 : right / positives,
    hits: right,
    falseHitsByKind,
  };
}

function cells(outcome: Outcome): string {
  const falseHits = [...outcome.falseHitsByKind].map(([kind, count]) => `${kind} ${count}`).join(', ') || '0';
  return `${format(outcome.precision)} | ${format(outcome.recall)} | ${falseHits}`;
}

/** The cosine range of each kind: where the threshold can and cannot separate. */
function cosineByKind(all: ScoredPair[]): string {
  const groups = new Map<string, number[]>();
  for (const pair of all) {
    const key = `${pair.kind} (${pair.same ? 'same' : 'different'})`;
    groups.set(key, [...(groups.get(key) ?? []), pair.cosine]);
  }
  const rows = [...groups].map(([key, cosines]) => {
    const sorted = cosines.sort((x, y) => x - y);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    return `| ${key} | ${sorted.length} | ${sorted[0]!.toFixed(3)} | ${median.toFixed(3)} | ${sorted.at(-1)!.toFixed(3)} |`;
  });
  return ['| kind | pairs | min cosine | median | max |', '|---|---|---|---|---|', ...rows, ''].join('\n');
}

function printMistakes(all: ScoredPair[], threshold: number): void {
  console.log(`\nAt ${threshold.toFixed(2)} with the guard:`);
  for (const pair of all) {
    const hit = pair.cosine >= threshold && pair.guardAllows;
    if (hit === pair.same) continue;
    const why = hit ? 'FALSE HIT' : pair.cosine < threshold ? 'miss (cosine)' : 'miss (guard)';
    console.log(`- ${why} ${pair.kind} ${pair.cosine.toFixed(3)}: ${JSON.stringify(pair.a)} / ${JSON.stringify(pair.b)}`);
  }
}

function describeKinds(all: ScoredPair[]): string {
  const counts = new Map<string, number>();
  for (const pair of all) counts.set(pair.kind, (counts.get(pair.kind) ?? 0) + 1);
  return [...counts].map(([kind, count]) => `${count} ${kind}`).join(', ');
}

function dot(x: Float32Array, y: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += x[i]! * y[i]!;
  return sum;
}

function format(value: number | undefined): string {
  return value === undefined ? '-' : value.toFixed(2);
}
