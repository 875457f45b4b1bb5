// What counting a chat prompt's tokens costs per request (the budget reservation does it for every request of a
// key with a budget), for a conversation that grows turn by turn as chat clients and agents resend it: with the
// counts of texts counted before kept (src/tokens/count-cache.ts), and with them forgotten before each request
// (how it was before). The messages are this repository's README in 1,500-character pieces. Figures, not a test.
//
//   npx tsx bench/token-count.ts [--turns 40] [--rounds 3]
// Then short requests against a nearly empty and a full cache (what a long-running gateway holds).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ChatMessage } from '../src/core/canonical.js';
import { COUNTED, countPromptTokens, TokenCounter } from '../src/tokens/tokenizer.js';

const { values } = parseArgs({ options: { turns: { type: 'string', default: '40' }, rounds: { type: 'string', default: '3' } } });
const TURNS = Number(values.turns);
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** One conversation: per turn a user message and an assistant answer of 1,500 characters each. */
function conversation(salt: number): ChatMessage[][] {
  const prompts: ChatMessage[][] = [];
  const messages: ChatMessage[] = [{ role: 'system', content: `You are a helpful assistant (${salt}).` }];
  for (let turn = 0; turn < TURNS; turn++) {
    const at = (turn * 3000) % (README.length - 3000);
    // Each conversation's texts are its own (the salt), so none was counted in an earlier run.
    messages.push({ role: 'user', content: `${salt} ${README.slice(at, at + 1500)}` });
    prompts.push([...messages]);
    messages.push({ role: 'assistant', content: `${salt} ${README.slice(at + 1500, at + 3000)}` });
  }
  return prompts;
}

function run(keep: boolean, salt: number): { perTurn: number[]; estimated: number } {
  const perTurn: number[] = [];
  let estimated = 0;
  for (const prompt of conversation(salt)) {
    if (!keep) COUNTED.clear();
    const started = performance.now();
    const counter = new TokenCounter();
    countPromptTokens(prompt, undefined, counter);
    perTurn.push((performance.now() - started) * 1000);
    if (counter.estimated) estimated++;
  }
  return { perTurn, estimated };
}

const at = (list: number[], turn: number): string => (list[turn - 1] ?? 0).toFixed(0).padStart(6);
const marks = [1, 5, 10, 20, 30, 40].filter((turn) => turn <= TURNS);
console.log(`a conversation of ${TURNS} turns (3,000 characters a turn), counted as each turn's request would be; µs a request`);
console.log(`${'turn'.padEnd(34)}${marks.map((turn) => String(turn).padStart(6)).join('')}   mean  estimated`);
for (let round = 0; round < Number(values.rounds); round++) {
  for (const keep of [false, true]) {
    const { perTurn, estimated } = run(keep, Math.random());
    const mean = perTurn.reduce((a, b) => a + b, 0) / perTurn.length;
    console.log(`${(keep ? 'counts kept' : 'counted afresh (before)').padEnd(34)}${marks.map((turn) => at(perTurn, turn)).join('')} ${mean.toFixed(0).padStart(6)}  ${estimated}/${TURNS}`);
  }
}

// A gateway that has run a while holds a full cache; what a short request (a fixed system prompt, a new question)
// costs then, against the same with the cache nearly empty. The roles and the system prompt are counted on every
// request: a hot key in a full cache.
function shortRequests(count: number): number {
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const prompt: ChatMessage[] = [
      { role: 'system', content: 'You are a helpful assistant. Answer briefly and cite your sources.' },
      { role: 'user', content: `Question ${i} ${Math.random()}: how are you today?` },
    ];
    countPromptTokens(prompt, undefined, new TokenCounter());
  }
  return ((performance.now() - started) * 1000) / count;
}
console.log('\nshort requests (a fixed system prompt, a new question each), µs a request:');
for (let round = 0; round < Number(values.rounds); round++) {
  COUNTED.clear();
  const nearlyEmpty = shortRequests(5_000);
  // Fill it: 60,000 new texts pass through a cache of 50,000, as they would over a day of traffic.
  for (let i = 0; i < 60_000; i++) COUNTED.set(`filler ${i} ${round}`.padEnd(40, '.'), 1);
  const full = shortRequests(5_000);
  console.log(`  cache nearly empty ${nearlyEmpty.toFixed(1).padStart(7)}   cache full ${full.toFixed(1).padStart(7)}`);
}
