/**
 * Anthropic beta opt-ins that Claude on Amazon Bedrock and on Vertex AI accept, and what each becomes there.
 *
 * Both platforms refuse the whole request ("invalid beta flag", a 400) for a flag they do not serve, and Claude
 * Code sends first-party flags on every request (`claude-code-20250219`, `oauth-2025-04-20`, `files-api-2025-04-14`,
 * `mcp-servers-2025-12-04`, `prompt-caching-scope-2026-01-05`, ...): forwarded as the client sent them, every turn
 * of such a client to Bedrock or Vertex would fail. A flag the platform is known to take is forwarded (under the
 * platform's name for it where that differs: Bedrock and Vertex serve Anthropic's `advanced-tool-use` as
 * `tool-search-tool`); any other is left out, so the request runs without that beta rather than not at all.
 *
 * The lists are AWS's and Google's documented flags, completed from LiteLLM's maintained table of what each platform
 * takes (`anthropic_beta_headers_config.json`). A client that knows it talks to Bedrock can still write its own
 * `anthropic_beta` in the body: that goes as written (see bedrock/claude.ts).
 */

const SAME = (names: readonly string[]): Array<[string, string]> => names.map((name) => [name, name]);

const BEDROCK_BETAS: ReadonlyMap<string, string> = new Map([
  ...SAME([
    'computer-use-2024-10-22',
    'computer-use-2025-01-24',
    'computer-use-2025-11-24',
    'token-efficient-tools-2025-02-19',
    'interleaved-thinking-2025-05-14',
    'output-128k-2025-02-19',
    'dev-full-thinking-2025-05-14',
    'context-1m-2025-08-07',
    'context-management-2025-06-27',
    'compact-2026-01-12',
    'dangerous-tool-use-2026-09-03',
    'effort-2025-11-24',
    'fine-grained-tool-streaming-2025-05-14',
    'tool-search-tool-2025-10-19',
    'tool-examples-2025-10-29',
    'thinking-binding-controls-2026-08-01',
    'thinking-display-updates-2026-08-18',
    'mid-conversation-output-config-2026-07-01',
    'mid-conversation-tool-changes-2026-07-01',
  ]),
  ['advanced-tool-use-2025-11-20', 'tool-search-tool-2025-10-19'],
]);

const VERTEX_BETAS: ReadonlyMap<string, string> = new Map([
  ...SAME([
    'computer-use-2024-10-22',
    'computer-use-2025-01-24',
    'computer-use-2025-11-24',
    'interleaved-thinking-2025-05-14',
    'context-1m-2025-08-07',
    'context-management-2025-06-27',
    'compact-2026-01-12',
    'compact-2026-09-04',
    'dangerous-tool-use-2026-09-03',
    'per-turn-control-2026-07-01',
    'thinking-binding-controls-2026-08-01',
    'thinking-display-updates-2026-08-18',
    'tool-search-tool-2025-10-19',
    'web-search-2025-03-05',
  ]),
  ['advanced-tool-use-2025-11-20', 'tool-search-tool-2025-10-19'],
]);

export type ClaudePlatform = 'bedrock' | 'vertex';

const TABLES: Record<ClaudePlatform, ReadonlyMap<string, string>> = { bedrock: BEDROCK_BETAS, vertex: VERTEX_BETAS };

/** The client's beta flags as the platform takes them: known ones renamed where needed, once each; others left out. */
export function platformBetas(platform: ClaudePlatform, betas: readonly string[]): string[] {
  const table = TABLES[platform];
  const out: string[] = [];
  for (const beta of betas) {
    const name = table.get(beta.trim().toLowerCase());
    if (name !== undefined && !out.includes(name)) out.push(name);
  }
  return out;
}

/** Whether the platform serves this beta (under its own name or another). */
export function platformServes(platform: ClaudePlatform, beta: string): boolean {
  return TABLES[platform].has(beta);
}

/** An `anthropic-beta` header's value (comma-separated flags) for the platform; undefined when no flag is left. */
export function platformBetaHeader(platform: ClaudePlatform, value: string): string | undefined {
  const betas = platformBetas(platform, value.split(','));
  return betas.length > 0 ? betas.join(',') : undefined;
}
