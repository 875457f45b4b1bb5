/**
 * The output guardrails of a tool called directly (`POST /v1/mcp/tools/call`, `tools/call` on `/mcp`): its result
 * goes to the client as an answer does, so the rules that apply to answers (`applies_to: output` or `both`) check it,
 * with the caller's key's and team's `guardrails` changes (a direct call has no route). Only the detector rules run
 * here: a `moderation` rule (a model call, charged as one) and a `json_schema` rule (about `response_format`) are
 * for model answers. In agent mode a tool's result is checked as the next turn's prompt instead (input rules).
 *
 * Compiled once per config version and distinct key/team overrides; a caller without an output rule gets no guard.
 */
import type { EventBus } from '../bus/bus.js';
import type { GuardrailsOverride, RuntimeConfig } from '../core/config.js';
import type { Identity } from '../core/context.js';
import { libraryRules } from '../config/runtime.js';
import { effectiveRules } from '../guardrails/effective-rules.js';
import { ACTION_PAST, foundWords } from '../guardrails/finding-words.js';
import { compileGuardrails } from '../guardrails/scanner.js';
import { guardToolResult } from '../guardrails/tool-result-guard.js';
import type { TextScanner } from '../guardrails/request-guard.js';
import type { Finding } from '../guardrails/types.js';

/**
 * What the hub runs on a tool's answer before capping it (see McpHubService.callTool): the result redacted, `blocked`
 * with the message the client gets instead of it, and `guardrails`, what the rules did as `output:<rule>:<action>`
 * (the request log's format; null when none acted), which the hub reports with the call (`mcp.tool.called`).
 */
export type ToolResultGuard = (
  content: readonly unknown[],
  structuredContent: Record<string, unknown> | undefined,
) => { content: unknown[]; structuredContent: Record<string, unknown> | undefined; blocked: string | null; guardrails: string[] | null };

/** Distinct override combinations kept compiled per config version; past it the map starts over. */
const MAX_SCANNERS = 1_000;
/** The most `guardrails` labels one call keeps (as the guardrails stage keeps for a request). */
const MAX_LABELS = 50;

/** Output scanners by config version, then by the caller's overrides (null: no output rule applies). */
const compiled = new WeakMap<RuntimeConfig, Map<string, TextScanner | null>>();

function outputScanner(config: RuntimeConfig, team: GuardrailsOverride | null, key: GuardrailsOverride | null): TextScanner | null {
  // Nothing configured anywhere: no work at all.
  if (config.guardrails.rules.length === 0 && !team && !key) return null;
  let byOverrides = compiled.get(config);
  if (!byOverrides) {
    byOverrides = new Map();
    compiled.set(config, byOverrides);
  }
  const id = `${team ? JSON.stringify(team) : ''}|${key ? JSON.stringify(key) : ''}`;
  const found = byOverrides.get(id);
  if (found !== undefined) return found;
  if (byOverrides.size >= MAX_SCANNERS) byOverrides.clear();
  const library = libraryRules(effectiveRules(config.guardrails.rules, [team, key]).rules);
  // The rules were checked when written (the config's at load, a key's or team's through the admin API).
  const scanner = library.length > 0 ? compileGuardrails(library, { stored: true }) : null;
  const text: TextScanner | null = scanner?.appliesTo('output')
    ? { scan: (value) => scanner.scan(value, 'output'), redact: (value, findings) => scanner.redact(value, findings) }
    : null;
  byOverrides.set(id, text);
  return text;
}

/** The message of a blocked tool result: the rule and what it found, never the text. */
export function blockedToolMessage(finding: Pick<Finding, 'rule' | 'kind'>, tool: string): string {
  const what = foundWords(finding.kind);
  return `Blocked by guardrail '${finding.rule}': the result of tool '${tool}' contains ${what}.`;
}

/**
 * The guard for one direct tool call by `identity` (undefined when no output rule applies to it): it reports each
 * rule's action on the bus (`guardrail.blocked`/`redacted`/`flagged`, side `output`, the call's request id and key),
 * and gives the result redacted, or `blocked` with the message the client gets instead of it, and the actions as the
 * call's `guardrails` labels (a blocked result's: its blocks only, as reported).
 */
export function toolResultGuard(config: RuntimeConfig, bus: EventBus, identity: Identity | null, requestId: string, tool: string): ToolResultGuard | undefined {
  const scanner = outputScanner(config, identity?.team?.guardrails ?? null, identity?.key.guardrails ?? null);
  if (!scanner) return undefined;
  return (content, structuredContent) => {
    const verdict = guardToolResult(content, structuredContent, scanner);
    const acted = verdict.blocked ? verdict.findings.filter((finding) => finding.action === 'block') : verdict.findings;
    return {
      content: verdict.content,
      structuredContent: verdict.structuredContent,
      blocked: verdict.blocked ? blockedToolMessage(verdict.blocked, tool) : null,
      guardrails: acted.length > 0 ? report(bus, requestId, identity, acted) : null,
    };
  };
}

/** One event per rule and action, with how many matches it acted on; never the matched text. Gives their labels. */
function report(bus: EventBus, requestId: string, identity: Identity | null, findings: readonly Finding[]): string[] {
  const counts = new Map<string, { finding: Finding; count: number }>();
  for (const finding of findings) {
    const id = `${finding.rule}\u0000${finding.action}`;
    const entry = counts.get(id);
    if (entry) entry.count++;
    else counts.set(id, { finding, count: 1 });
  }
  const labels: string[] = [];
  for (const { finding, count } of counts.values()) {
    const past = ACTION_PAST[finding.action];
    bus.emit(`guardrail.${past}`, { requestId, rule: finding.rule, kind: finding.kind, side: 'output', count, keyId: identity?.key.id ?? null, route: null });
    if (labels.length < MAX_LABELS) labels.push(`output:${finding.rule}:${past}`);
  }
  return labels;
}
