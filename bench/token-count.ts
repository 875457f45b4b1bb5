// What counting a chat prompt's tokens costs per request (the budget reservation does it for every request of a
// key with a budget), for a conversation that grows turn by turn as chat clients and agents resend it: with the
// counts of texts counted before kept (src/tokens/count-cache.ts), and with them forgotten before each request
// (how it was before). The messages are this repository's README in 1,500-character pieces. Figures, not a test.
//
//   npx tsx bench/token-count.ts [--turns 40] [--rounds 3]
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
