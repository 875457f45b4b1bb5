import { gatewayError, GatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { quoteInput } from '../../core/quote-input.js';
import { MCP_TOOL_SEPARATOR } from '../../core/mcp.js';
import type { GovernanceStore } from '../../governance/governance-store.js';

/**
 * A team's `mcp.allow` is the ceiling of its keys' lists: at a request a tool must pass both (mcp-policy.ts), so a
 * key's entry outside its team's list never gave the key that tool. Written through the admin API, such an entry was
 * taken without a word and the key silently lacked tools its own list named; it is now a 400 naming the entry, when
 * a key's list is written and when a key moves to another team. A team whose list later narrows is not refused: the
 * key's entries past it simply match nothing (the team still caps them at every request).
 */

/** Whether `entry` (`server`, `server__tool`, `server__*`) allows nothing the team's `allow` does not. */
function withinCeiling(entry: string, ceiling: readonly string[]): boolean {
  const separator = entry.indexOf(MCP_TOOL_SEPARATOR);
  const server = separator > 0 ? entry.slice(0, separator) : entry;
  const wholeServer = separator < 0 || entry === `${server}${MCP_TOOL_SEPARATOR}*`;
  // The team allowing the whole server covers any entry of it; a single tool only covers that tool.
  if (ceiling.includes(server) || ceiling.includes(`${server}${MCP_TOOL_SEPARATOR}*`)) return true;
  return !wholeServer && ceiling.includes(entry);
}

/** The team's policy, or null when there is no such team (the store gives that error itself). */
function teamOf(store: GovernanceStore, id: string): ReturnType<GovernanceStore['getTeam']> | null {
  try {
    return store.getTeam(id);
  } catch (err) {
    if (err instanceof GatewayError) return null;
    throw err;
  }
}

/**
 * Checks a key's create (`keyId` absent) or patch body: the key's `mcp.allow` as it will be, against the `mcp.allow`
 * of the team it will be in. Only a body that writes `mcp` or `team` is checked (a rename leaves an older key be).
 */
export function checkMcpAllowCeiling(body: unknown, store: GovernanceStore, keyId?: string): void {
  if (!isRecord(body) || (!('mcp' in body) && !('team' in body))) return;
  const current = keyId === undefined ? null : store.getKey(keyId);
  const mcp = 'mcp' in body ? body.mcp : current?.mcp;
  const team = 'team' in body ? body.team : current?.team;
  // A malformed body gets the schema's own message.
  if (!isRecord(mcp) || !Array.isArray(mcp.allow) || typeof team !== 'string') return;
  const ceiling = teamOf(store, team)?.mcp?.allow;
  if (!ceiling) return;
  mcp.allow.forEach((entry: unknown, index) => {
    if (typeof entry !== 'string' || withinCeiling(entry, ceiling)) return;
    const allowed = ceiling.length > 0 ? ceiling.map((name) => `'${name}'`).join(', ') : 'none ("allow": [])';
    throw gatewayError(
      'invalid_value',
      `Invalid 'mcp.allow.${index}': '${quoteInput(entry)}' allows more than the key's team '${quoteInput(team, 64)}' does; a key's mcp.allow cannot go past its team's, which allows ${allowed}. Leave the key's allow out to let it use what its team allows.`,
      { param: `mcp.allow.${index}` },
    );
  });
}
