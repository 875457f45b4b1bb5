import type { VirtualKeyRecord } from '../core/identity.js';
/**
 * Governance records as stored in LMDB and shown by the API (snake_case, like the rest of the API). The key
 * secret is never stored: only its sha256 hash and a short prefix for recognising it.
 */
/** The key record as the API shows it: everything but the hash. */
export type VirtualKeyView = Omit<VirtualKeyRecord, 'key_hash'>;

/** One finished request, written in the same transaction as the spend it caused. */
export interface RequestLogEntry {
  id: string;
  at: string;
  key_id: string | null;
  team_id: string | null;
  model: string;
  provider: string | null;
  upstream_model: string | null;
  status: number;
  stream: boolean;
  cancelled: boolean;
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: number;
  /** False when no price was known for the model (cost 0). */
  priced: boolean;
  duration_ms: number;
  /** The route the request followed, when its model named one. */
  route?: string;
  /** For a request that ended in an error (refused, or failed upstream): its type, code and message. */
  error_type?: string;
  error_code?: string | null;
  error_message?: string;
  // The fields below were added with the observability work; entries written before lack them.
  /** The client format (`openai`, `anthropic`, `gemini`, `litellm`) and the path it called. */
  dialect?: string;
  path?: string;
  /** `chat` or `embeddings`. */
  operation?: string;
  /** Each upstream attempt, in order (retries and fallbacks included). */
  attempts?: RequestAttempt[];
  /** The answering (or last tried) target was a fallback. */
  fallback?: boolean;
  /** Milliseconds waiting on upstreams, to the first answer event (null: none sent), and the gateway's own (total minus upstream). */
  upstream_ms?: number;
  first_token_ms?: number | null;
  overhead_ms?: number;
  /** Parts of prompt_tokens read from / written to a prompt cache, and of completion_tokens spent reasoning. */
  cached_tokens?: number;
  cache_write_tokens?: number;
  /** What the response cache did (`hit-exact`, `hit-semantic`, `miss`, `skip`, `shadow-hit`); absent when it is off. */
  cache?: string;
  /** What guardrails did: `<side>:<rule>:<action>` (`input:cards:redacted`); absent when none acted. */
  guardrails?: string[];
  reasoning_tokens?: number;
  /** Tokens were counted by tollgate (the upstream reported none). */
  estimated?: boolean;
  /** The request's `user` and `metadata` tags. */
  user?: string | null;
  metadata?: Record<string, string> | null;
  /** Kept only with `settings.log_bodies.enabled`: size-capped, secrets redacted. */
  request_body?: string;
  response_body?: string;
  /** The entry's place in the order entries were written (request-log-writes.ts); absent on entries written before it. */
  write_seq?: number;
}

/** One upstream attempt of a request, as the request log keeps it. */
export interface RequestAttempt {
  provider: string;
  model: string;
  /** The upstream's HTTP status; null when none came (connection error, timeout, cancelled). */
  status: number | null;
  ok: boolean;
  duration_ms: number;
  error_code: string | null;
}

/** Every virtual key secret starts with this, so a key that looks like ours but is unknown is a 401. */
export const VIRTUAL_KEY_PREFIX = 'tg-';
