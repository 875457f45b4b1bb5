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
  /** For a request that ended in an error (refused, or failed upstream): its type and code. */
  error_type?: string;
  error_code?: string | null;
}

/** Every virtual key secret starts with this, so a key that looks like ours but is unknown is a 401. */
export const VIRTUAL_KEY_PREFIX = 'tg-';
