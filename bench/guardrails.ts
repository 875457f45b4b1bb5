// Guardrails benchmark: the cost of scanning a realistic 2 KB prompt with every regex/PII/secret/injection rule on,
// of redacting it, and of the stream guard per chunk on a 20-chunk answer, each beside a baseline measured in the
// same run (the same text through JSON.stringify, and through a scanner with no rules). Usage:
//   npm run bench:guardrails -- [--iterations 20000]
import { parseArgs } from 'node:util';
import { compileGuardrails, createStreamGuard, type GuardrailRule, type Scanner } from '../src/guardrails/index.js';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '20000' } } });
const iterations = Number(values.iterations);
if (!Number.isInteger(iterations) || iterations < 100) throw new Error(`bad --iterations: ${values.iterations}`);

const rules: GuardrailRule[] = [
  { name: 'email', kind: 'email', action: 'redact' },
  { name: 'phone', kind: 'phone', action: 'redact' },
  { name: 'card', kind: 'payment_card', action: 'redact' },
  { name: 'iban', kind: 'iban', action: 'redact' },
  { name: 'national_id', kind: 'national_id', action: 'redact', formats: ['us_ssn', 'uk_nino', 'es_dni', 'nl_bsn'] },
  { name: 'secret', kind: 'secret', action: 'block' },
  { name: 'injection', kind: 'prompt_injection', action: 'flag', applies_to: 'both' },
  { name: 'deny_words', kind: 'keyword', action: 'block', keywords: ['project zeus', 'internal only', 'confidential roadmap', 'acme merger', 'codename falcon'] },
  { name: 'deny_regex', kind: 'regex', action: 'flag', patterns: ['\\bTICKET-\\d{3,6}\\b', '\\bcustomer\\s{1,3}#\\d{4,8}\\b'], case_insensitive: true },
];

/** A support-desk prompt of about 2 KB: prose, code, numbers that are not PII, and a few that are. */
const PROMPT = `You are a helpful assistant for the billing team. Summarise the conversation below for the account manager,
list the open questions, and draft a polite reply. Keep it under 200 words and do not invent facts.

Customer: Hi, I was charged twice for order 100234987 on 2024-03-14 (invoice INV-2024-0031). My card ends in 1111 and
the statement shows two debits of 49.90 EUR at 10:42:17 and 10:42:19. Could you refund one? You can reach me at
jane.doe+billing@example.co.uk or on +44 20 7946 0958 after 5pm. If it is easier, refund to my account
DE89 3704 0044 0532 0130 00 instead.

Agent: Thanks Jane, I can see both charges against customer #482913 in TICKET-88123. The second one was a retry after
a gateway timeout (HTTP 504) and should have been voided automatically. I've escalated it.

Customer: Great. Also, the export endpoint returns {"status":"error","code":429,"retry_after_ms":1500} when I pull
more than 10000 rows; is there a limit per minute? Our integration runs this every 15 minutes:

    for page in range(1, 51):
        rows = client.export(since="2024-03-01T00:00:00Z", page=page, page_size=200)
        write_rows(rows)

Agent: The limit is 600 requests per minute per workspace; paging at 200 rows keeps you well under it. Version 3.2.1
of the SDK backs off automatically. For the duplicate charge, finance will confirm within 3 to 5 business days.

Customer: Perfect, thank you. One last thing: our new office number is 415-555-2671 and the VAT id on invoices should
read GB123456789. Please update both and send the corrected invoice for March (total 1,249.50 EUR, 3 seats, annual plan).

Notes from the previous shift: the customer was polite throughout; no further action needed on the API question.
Priority: normal. Region: EU-West. Account age: 4 years. Plan: Business Annual. Seats: 3. Renewal: 2025-01-01.
Previous tickets: two in 2023 (both about SSO setup with Okta, resolved in under a day), one in 2022 about CSV exports
with semicolons as separators for the German Excel locale. Satisfaction scores: 5, 5, 4.`;

function stats(samples: number[]): { p50: number; p99: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: sorted[Math.floor(sorted.length * 0.5)]!, p99: sorted[Math.floor(sorted.length * 0.99)]! };
}

/** Microseconds per call of `fn`, one sample per call (after a warm-up of a tenth of the iterations). */
function measure(fn: () => unknown, count = iterations): { p50: number; p99: number } {
  for (let i = 0; i < count / 10; i++) fn();
  const samples = new Array<number>(count);
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint();
    fn();
    samples[i] = Number(process.hrtime.bigint() - started) / 1000;
  }
  return stats(samples);
}

const scanner = compileGuardrails(rules);
const empty = compileGuardrails([]);
const findings = scanner.scan(PROMPT, 'input');

/** An answer of 20 chunks: the prompt's text cut into 20 pieces. */
const CHUNKS = Array.from({ length: 20 }, (_, i) => PROMPT.slice(Math.floor((i * PROMPT.length) / 20), Math.floor(((i + 1) * PROMPT.length) / 20)));

/** Microseconds per chunk over one whole streamed answer (pushes and the end), sampled per answer. */
function measureStream(use: Scanner, count: number): { p50: number; p99: number } {
  const run = () => {
    const guard = createStreamGuard(use);
    for (const chunk of CHUNKS) guard.push(chunk);
    guard.end();
  };
  const perAnswer = measure(run, count);
  return { p50: perAnswer.p50 / (CHUNKS.length + 1), p99: perAnswer.p99 / (CHUNKS.length + 1) };
}

const rows: Array<[string, { p50: number; p99: number }]> = [
  ['baseline: JSON.stringify(prompt)', measure(() => JSON.stringify(PROMPT))],
  ['baseline: empty scanner scan', measure(() => empty.scan(PROMPT, 'input'))],
  ['scan, all rules', measure(() => scanner.scan(PROMPT, 'input'))],
  ['redact (given the findings)', measure(() => scanner.redact(PROMPT, findings))],
  ['scan + redact', measure(() => scanner.redact(PROMPT, scanner.scan(PROMPT, 'input')))],
  ['baseline: stream guard, empty scanner, per chunk', measureStream(empty, Math.max(100, iterations / 10))],
  ['stream guard, all output rules, per chunk', measureStream(scanner, Math.max(100, iterations / 10))],
];

console.log(`Guardrails bench: ${PROMPT.length} characters, ${rules.length} rules, ${findings.length} findings on the prompt; ${iterations} iterations; Node ${process.version}`);
console.log(`stream: ${CHUNKS.length} chunks of ~${Math.round(PROMPT.length / CHUNKS.length)} characters, look-behind ${scanner.lookBehind('output')}`);
console.log('');
console.log(`${'measurement'.padEnd(52)} ${'p50 µs'.padStart(10)} ${'p99 µs'.padStart(10)}`);
for (const [name, { p50, p99 }] of rows) console.log(`${name.padEnd(52)} ${p50.toFixed(1).padStart(10)} ${p99.toFixed(1).padStart(10)}`);
console.log('');
console.log('findings:', findings.map((f) => `${f.rule}${f.subtype ? `/${f.subtype}` : ''}`).join(', '));
