// What the full pipeline's five guardrail rules (bench/serve-full-gateway.ts) cost a JSON request of the suite's
// shape, in process: a scan of its question (input) and of its 20-word answer (output), whole and rule by rule, in
// µs per scan. bench/guardrails.ts measures a long prompt full of findings; this one the usual short text with none.
// Run it in two worktrees to compare builds.
//
//   npx tsx bench/guard-scan.ts [--scans 200000] [--rounds 3]
import { parseArgs } from 'node:util';
import { compileGuardrails, type GuardrailRule } from '../src/guardrails/index.js';

const { values } = parseArgs({ options: { scans: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '3' } } });
const SCANS = Number(values.scans);
const ROUNDS = Number(values.rounds);

const rules: GuardrailRule[] = [
  { name: 'cards', kind: 'payment_card', action: 'block' },
  { name: 'emails', kind: 'email', action: 'redact' },
  { name: 'ids', kind: 'national_id', action: 'redact', formats: ['us_ssn', 'uk_nino'] },
  { name: 'keys', kind: 'secret', action: 'redact' },
  { name: 'internal-urls', kind: 'regex', patterns: ['https?://[a-z0-9.-]+\\.corp\\.example\\b'], action: 'redact' },
];
const scanner = compileGuardrails(rules);
const texts = {
  question: 'hello there, how are you today? This is question 12345.',
  answer: Array.from({ length: 20 }, (_, i) => `${i === 0 ? '' : ' '}word${i}`).join(''),
};

function time(work: () => unknown): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < SCANS; i++) work();
  return Number(process.hrtime.bigint() - started) / 1000 / SCANS;
}

console.log(`${SCANS} scans a measure, ${ROUNDS} rounds (µs per scan)`);
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, text] of Object.entries(texts)) {
    const whole = time(() => scanner.scan(text, 'input'));
    const each = scanner.rules.map((rule) => `${rule.name} ${time(() => rule.detect(text, 0)).toFixed(3)}`);
    console.log(`round ${round + 1} ${name}: scan ${whole.toFixed(3)}  (${each.join(', ')})`);
  }
}
