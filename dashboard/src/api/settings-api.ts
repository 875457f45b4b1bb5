import { api, apiUrl, request } from './client.js';

/**
 * What the settings and audit pages read and write (README "Management API"): the effective config
 * (`GET/PUT /api/config`), its dry run (`POST /api/config/validate`, cancelled when the next keystroke supersedes
 * it) and the audit log.
 */

export interface ConfigWarning {
  field: string;
  message: string;
}

/** `GET /api/config`: the effective view. */
export interface EffectiveConfig {
  version: number;
  precedence: string[];
  file: string | null;
  settings: Record<string, unknown>;
  providers: Record<string, unknown>[];
  routes: Record<string, unknown>[];
  routing_rules: unknown[];
  plugins: unknown[];
  cache: Record<string, unknown>;
  warnings: ConfigWarning[];
  file_rejection: { file: string; at: string; reason: string } | null;
}

/** Fields of the view that describe the running gateway: shown, never sent (PUT ignores them anyway). */
export const READ_ONLY_FIELDS = ['version', 'precedence', 'file', 'warnings', 'file_rejection'] as const;

export interface Validation {
  valid: true;
  warnings: ConfigWarning[];
}

export interface AuditEntry {
  id: string;
  at: string;
  actor: { kind: string; id: string };
  action: string;
  target: string;
  before: unknown;
  after: unknown;
  version: number;
}

/** `POST /api/config/validate`: the 400 PUT would give (as an ApiError naming the field), or the warnings. */
export function validateConfig(document: unknown, signal?: AbortSignal): Promise<Validation> {
  return api.post<Validation>('/config/validate', document, signal);
}

/**
 * `PUT /api/config`: replaces what the API set; answers the new effective view. Sent with If-Match on the version the
 * text was read at: a change made since (another administrator, a file save) gets a 412 instead of being undone.
 */
export async function saveConfig(document: unknown, readAtVersion: number): Promise<EffectiveConfig> {
  const response = await request('PUT', apiUrl('/config'), document, { headers: { 'if-match': `"${readAtVersion}"` } });
  return (await response.json()) as EffectiveConfig;
}
