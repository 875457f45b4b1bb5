/**
 * Prompt-injection heuristics, meant for input (a user message, a retrieved document, a tool result). Each signal is
 * a phrase pattern with a weight; a text's score combines the weights of the distinct signals it holds as
 * 1 − Π(1 − weight), so two medium signals outweigh one, and the same signal repeated counts once. When the score
 * reaches the rule's threshold (default 0.7) every signal found is reported, each carrying the text's score.
 *
 * Signals caught (case-insensitive, English):
 * - `override`: ignore / disregard / forget / override / bypass (all / any / the / your) previous / prior / above /
 *   earlier / preceding / system instructions, prompts, rules, directions, guidelines or context (0.9);
 * - `prompt_leak`: reveal / show / print / repeat / output / leak / tell me … your / the system, initial, hidden or
 *   original prompt / instructions / message (0.8);
 * - `jailbreak_persona`: you are now DAN / an unrestricted / unfiltered / jailbroken …, act as DAN, do anything now,
 *   developer mode enabled / on, jailbreak mode (0.7);
 * - `role_marker`: chat-template markers smuggled into user text: `<|im_start|>system`, `<|system|>`, `<<SYS>>`,
 *   `[INST]`, `<|start_header_id|>system`, `### System:` / `### Instruction:` (0.8); a line starting `system:` (0.6);
 * - `no_restrictions`: without (any) restrictions / filters / limitations / guidelines / censorship, no longer bound by (0.4);
 * - `new_instructions`: new instructions: / from now on you will / must (0.35).
 *
 * It is a heuristic, not a classifier: paraphrases, other languages, encodings (base64, leetspeak) and instructions
 * spread over several messages get through, and a text that discusses injection may be flagged. Flag or block on
 * it according to how much of either the deployment can tolerate.
 *
 * Linear time: every pattern starts at a word boundary with a literal word, and all gaps are bounded (`\s{1,5}`,
 * `[^\n]{0,60}`).
 */
import type { Detection } from '../types.js';
import { withFields } from '../../core/with-fields.js';

interface Signal {
  id: string;
  weight: number;
  re: RegExp;
}

const GAP = '\\s{1,5}';
const SIGNALS: readonly Signal[] = [
  {
    id: 'override',
    weight: 0.9,
    re: new RegExp(
      `\\b(?:ignore|disregard|forget|override|bypass)${GAP}(?:(?:all|any|the|your|of|my)${GAP}){0,3}(?:previous|prior|above|earlier|preceding|former|system|original)${GAP}(?:instructions?|prompts?|rules|directions|directives|guidelines|context|messages?)\\b`,
      'gi',
    ),
  },
  {
    id: 'prompt_leak',
    weight: 0.8,
    re: /\b(?:reveal|show|print|repeat|output|leak|display|tell\s{1,5}me|what\s{1,5}(?:is|are))\b[^\n.?!]{0,40}?\b(?:your|the)\s{1,5}(?:system|initial|hidden|original|secret)\s{1,5}(?:prompt|instructions?|message)\b/gi,
  },
  {
    id: 'jailbreak_persona',
    weight: 0.7,
    re: /\b(?:you\s{1,5}are\s{1,5}now\s{1,5}(?:DAN|an?\s{1,5}(?:unrestricted|unfiltered|uncensored|jailbroken)|in\s{1,5}developer\s{1,5}mode|free\s{1,5}from)|act\s{1,5}as\s{1,5}(?:DAN|an?\s{1,5}(?:unrestricted|unfiltered|uncensored|jailbroken))|do\s{1,5}anything\s{1,5}now|developer\s{1,5}mode\s{1,5}(?:enabled|on|activated)|jailbreak\s{1,5}mode)\b/gi,
  },
  {
    id: 'role_marker',
    weight: 0.8,
    re: /<\|im_start\|>\s{0,5}system|<\|system\|>|<<SYS>>|\[INST\]|<\|start_header_id\|>\s{0,5}system|^[ \t]{0,8}#{2,4}[ \t]{0,4}(?:system|instruction)[ \t]{0,4}:/gim,
  },
  { id: 'role_line', weight: 0.6, re: /^[ \t]{0,8}system[ \t]{0,4}:/gim },
  {
    id: 'no_restrictions',
    weight: 0.4,
    re: /\b(?:without\s{1,5}(?:any\s{1,5})?(?:restrictions|filters|limitations|guidelines|censorship)|no\s{1,5}longer\s{1,5}bound\s{1,5}by)\b/gi,
  },
  { id: 'new_instructions', weight: 0.35, re: /\b(?:new\s{1,5}instructions\s{0,3}:|from\s{1,5}now\s{1,5}on,?\s{1,5}you\s{1,5}(?:will|must|shall))/gi },
];

/** The default score a text must reach to be reported. */
export const DEFAULT_INJECTION_THRESHOLD = 0.7;
/** The longest signal phrase, with its gaps at their longest. */
export const PROMPT_INJECTION_WINDOW = 160;

/** Every signal found from `from` on, each with the combined score of the distinct signals found; none below the threshold. */
export function detectPromptInjection(text: string, from = 0, threshold = DEFAULT_INJECTION_THRESHOLD): Detection[] {
  const hits: Detection[] = [];
  let miss = 1;
  for (const { id, weight, re } of SIGNALS) {
    re.lastIndex = from;
    let seen = false;
    for (;;) {
      const match = re.exec(text);
      if (match === null) break;
      if (match[0].length === 0) {
        re.lastIndex = match.index + 1;
        continue;
      }
      hits.push({ start: match.index, end: match.index + match[0].length, kind: 'prompt_injection', subtype: id });
      seen = true;
    }
    if (seen) miss *= 1 - weight;
  }
  const score = Math.round((1 - miss) * 1000) / 1000;
  if (hits.length === 0 || score < threshold) return [];
  return hits.map((hit) => withFields(hit, { score })).sort((a, b) => a.start - b.start);
}
