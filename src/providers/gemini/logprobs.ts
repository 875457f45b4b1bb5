import { isRecord } from '../../core/is-record.js';

/**
 * Gemini's log probabilities (a candidate's `logprobsResult`, returned when the request set `responseLogprobs`, with
 * `logprobs` top candidates per decoding step) as OpenAI's choice `logprobs`: one `content` entry per chosen token,
 * each with its UTF-8 bytes and the step's top candidates. Null when the candidate carries none.
 */

interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

function tokenOf(candidate: unknown): TokenLogprob | null {
  if (!isRecord(candidate) || typeof candidate.token !== 'string') return null;
  // Gemini leaves logProbability out when it is 0 (proto JSON omits default values).
  const logprob = typeof candidate.logProbability === 'number' ? candidate.logProbability : 0;
  return { token: candidate.token, logprob, bytes: [...Buffer.from(candidate.token, 'utf8')] };
}

export function logprobsFromGemini(result: unknown): { content: Array<TokenLogprob & { top_logprobs: TokenLogprob[] }>; refusal: null } | null {
  if (!isRecord(result) || !Array.isArray(result.chosenCandidates)) return null;
  const top = Array.isArray(result.topCandidates) ? result.topCandidates : [];
  const content: Array<TokenLogprob & { top_logprobs: TokenLogprob[] }> = [];
  result.chosenCandidates.forEach((chosen: unknown, step: number) => {
    const token = tokenOf(chosen);
    if (token === null) return;
    const alternatives = isRecord(top[step]) && Array.isArray(top[step].candidates) ? top[step].candidates : [];
    content.push({ ...token, top_logprobs: alternatives.map(tokenOf).filter((entry: TokenLogprob | null): entry is TokenLogprob => entry !== null) });
  });
  return { content, refusal: null };
}
