import { type Json } from '../../wire/gemini/shapes.js';
import { isRecord } from '../../core/is-record.js';

/**
 * OpenAI's choice `logprobs` (one `content` entry per token, each with its `top_logprobs`) as Gemini's candidate
 * `logprobsResult` (https://ai.google.dev/api/generate-content#LogprobsResult: a chosen candidate and the top
 * candidates per decoding step, and their sum) and `avgLogprobs`, the inverse of the Gemini adapter's
 * logprobsFromGemini. Null when the choice carries none.
 */
export function geminiLogprobs(logprobs: unknown): { logprobsResult: Json; avgLogprobs: number } | null {
  if (!isRecord(logprobs) || !Array.isArray(logprobs.content) || logprobs.content.length === 0) return null;
  const chosenCandidates: Json[] = [];
  const topCandidates: Json[] = [];
  let sum = 0;
  for (const entry of logprobs.content) {
    const token = candidateOf(entry);
    if (!token) continue;
    chosenCandidates.push(token);
    sum += token.logProbability as number;
    const top = isRecord(entry) && Array.isArray(entry.top_logprobs) ? entry.top_logprobs : [];
    topCandidates.push({ candidates: top.map(candidateOf).filter((candidate): candidate is Json => candidate !== null) });
  }
  if (chosenCandidates.length === 0) return null;
  return { logprobsResult: { chosenCandidates, topCandidates, logProbabilitySum: sum }, avgLogprobs: sum / chosenCandidates.length };
}

function candidateOf(entry: unknown): Json | null {
  if (!isRecord(entry) || typeof entry.token !== 'string' || typeof entry.logprob !== 'number') return null;
  return { token: entry.token, logProbability: entry.logprob };
}
