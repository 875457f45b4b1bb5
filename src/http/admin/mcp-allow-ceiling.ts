import { gatewayError, GatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { quoteInput } from '../../core/quote-input.js';
import { allowsServer, entryServer, MCP_TOOL_SEPARATOR } from '../../core/mcp.js';
import type { GovernanceStore } from '../../governance/governance-store.js';

/**
 * A team's `mcp.allow` is the ceiling of its keys' lists: at a request a tool must pass both (mcp-policy.ts), so a
 * key's entry outside its team's list never gave the key that tool. Written through the admin API, such an entry was
 * taken without a word and the key silently lacked tools its own list named; it is now a 400 naming the entry, when
 * a key's list is written and when a key moves to another team. A team whose list later narrows is not refused: the
 * key's entries past it simply match nothing (the team still caps them at every request).
 *
 * The same goes for the servers a key or team attaches to every chat request (`mcp.servers`): a server its own
 * `allow` (or, for a key, its team's) does not let it ask for made every chat request of that key a 403
 * `mcp_tool_not_allowed`; it is a 400 naming the server when written.
 */

/** Whether `entry` (`server`, `server__tool`, `server__*`) allows nothing the team's `allow` does not. */
function withinCeiling(entry: string, ceiling: readonly string[]): boolean {
  const server = entryServer(entry);
  const wholeServer = !entry.includes(MCP_TOOL_SEPARATOR) || entry === `${server}${MCP_TOOL_SEPARATOR}*`;
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
  if (!isRecord(mcp)) return;
  const teamId = typeof team === 'string' ? team : null;
  const ceiling = teamId === null ? undefined : teamOf(store, teamId)?.mcp?.allow;
  checkAttachedServers(mcp, 'key', teamId === null || ceiling === undefined ? null : { team: teamId, allow: ceiling });
  if (!Array.isArray(mcp.allow) || teamId === null || !ceiling) return;
  mcp.allow.forEach((entry: unknown, index) => {
    if (typeof entry !== 'string' || withinCeiling(entry, ceiling)) return;
    const allowed = ceiling.length > 0 ? ceiling.map((name) => `'${name}'`).join(', ') : 'none ("allow": [])';
    throw gatewayError(
      'invalid_value',
      `Invalid 'mcp.allow.${index}': '${quoteInput(entry)}' allows more than the key's team '${quoteInput(teamId, 64)}' does; a key's mcp.allow cannot go past its team's, which allows ${allowed}. Leave the key's allow out to let it use what its team allows.`,
      { param: `mcp.allow.${index}` },
    );
  });
}

/**
 * Checks a team's create or patch body: every server its `mcp.servers` attaches must be one its `mcp.allow` lets it
 * ask for. A patch's `mcp` replaces the stored policy whole, so the body alone is the policy as it will be. (A team
 * whose `allow` later drops a server its keys attach is not refused, as for the ceiling above: those keys' chat
 * requests are then refused with a 403 naming the server, which the operator sees in the request log.)
 */
export function checkTeamMcpServers(body: unknown): void {
  if (isRecord(body) && isRecord(body.mcp)) checkAttachedServers(body.mcp, 'team', null);
}

/** Each of `mcp.servers` must pass the policy's own `allow` and, for a key, its team's. */
function checkAttachedServers(mcp: Record<string, unknown>, owner: 'key' | 'team', team: { team: string; allow: readonly string[] } | null): void {
  if (!Array.isArray(mcp.servers)) return;
  const own = Array.isArray(mcp.allow) && mcp.allow.every((entry) => typeof entry === 'string') ? (mcp.allow as string[]) : undefined;
  mcp.servers.forEach((server: unknown, index) => {
    if (typeof server !== 'string') return;
    if (!allowsServer(own, server)) {
      throw gatewayError(
        'invalid_value',
        `Invalid 'mcp.servers.${index}': the ${owner}'s own mcp.allow lets it use nothing of the MCP server '${quoteInput(server)}', so every chat request would be refused (403). Add '${quoteInput(server)}' (or some of its tools) to mcp.allow, or leave the server out.`,
        { param: `mcp.servers.${index}` },
      );
    }
    if (team && !allowsServer(team.allow, server)) {
      throw gatewayError(
        'invalid_value',
        `Invalid 'mcp.servers.${index}': the key's team '${quoteInput(team.team, 64)}' allows nothing of the MCP server '${quoteInput(server)}' (its mcp.allow), so every chat request would be refused (403). Leave the server out, or allow it on the team.`,
        { param: `mcp.servers.${index}` },
      );
    }
  });
}
