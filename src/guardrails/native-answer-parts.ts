/**
 * The texts of an upstream's own answer (native pass-through) that the canonical answer has no form for, so the
 * rules reading the canonical answer never see them, while the client gets them as the upstream wrote them:
 *
 * - Gemini: the code the model runs with the code execution tool (`executableCode.code`) and what it printed
 *   (`codeExecutionResult.output`);
 * - Anthropic: a server tool call's input (`server_tool_use`, `mcp_tool_use`: a web search's query, code to run),
 *   which the stream's guard reads as it streams (see AnthropicEventGuard).
 *
 * A part is checked whole, each a text of its own (a tool input as its JSON, read back after a redaction).
 */
import { isRecord } from '../core/is-record.js';
import type { TextScanner } from './request-guard.js';
import type { Finding } from './types.js';

type Json = Record<string, unknown>;

/** A Gemini part's text the canonical form leaves out: which part field holds it, and its text field. */
export const GEMINI_CODE_TEXTS = [
  ['executableCode', 'code'],
  ['codeExecutionResult', 'output'],
] as const;

/** The text of a Gemini code execution part, with a way to put a changed one back; null for any other part. */
export function geminiCodeText(part: Json): { text: string; with: (value: string) => Json } | null {
  for (const [holder, field] of GEMINI_CODE_TEXTS) {
    const value = part[holder];
    if (isRecord(value) && typeof value[field] === 'string') return { text: value[field], with: (text) => ({ ...part, [holder]: { ...value, [field]: text } }) };
  }
  return null;
}

/** Anthropic's server-run tool calls, whose input no canonical tool call carries. */
const ANTHROPIC_SERVER_CALLS = new Set(['server_tool_use', 'mcp_tool_use']);

export interface NativePartsVerdict {
  /** The body with every redaction made (the same object when none was). */
  body: Json;
  findings: Finding[];
  /** The first block, and the index of the choice (candidate) it is in. */
  blocked: { finding: Finding; choice: number } | null;
}

/** Checks the parts of a whole native answer no canonical answer carries; null when the format has none or none was found. */
export function guardNativeParts(format: string, body: Json, scanner: TextScanner): NativePartsVerdict | null {
  const findings: Finding[] = [];
  let blocked: NativePartsVerdict['blocked'] = null;
  /** One text checked: its findings kept, the first block noted, and the text redacted (null when nothing changed). */
  const check = (text: string, choice: number): string | null => {
    if (blocked) return null;
    const found = scanner.scan(text);
    for (const finding of found) findings.push(finding);
    const block = found.find((finding) => finding.action === 'block');
    if (block) {
      blocked = { finding: block, choice };
      return null;
    }
    return found.some((finding) => finding.action === 'redact') ? scanner.redact(text, found) : null;
  };
  let out = body;
  if (format === 'gemini' && Array.isArray(body.candidates)) {
    let changed = false;
    const candidates = body.candidates.map((candidate: unknown, position: number) => {
      if (!isRecord(candidate) || !isRecord(candidate.content) || !Array.isArray(candidate.content.parts)) return candidate;
      const index = typeof candidate.index === 'number' ? candidate.index : position;
      let partsChanged = false;
      const parts = candidate.content.parts.map((part: unknown) => {
        const code = isRecord(part) ? geminiCodeText(part) : null;
        const redacted = code ? check(code.text, index) : null;
        if (!code || redacted === null) return part;
        partsChanged = true;
        return code.with(redacted);
      });
      if (!partsChanged) return candidate;
      changed = true;
      return { ...candidate, content: { ...candidate.content, parts } };
    });
    if (changed) out = { ...body, candidates };
  } else if (format === 'anthropic' && Array.isArray(body.content)) {
    let changed = false;
    const content = body.content.map((block: unknown) => {
      if (!isRecord(block) || typeof block.type !== 'string' || !ANTHROPIC_SERVER_CALLS.has(block.type) || block.input === undefined) return block;
      const redacted = check(JSON.stringify(block.input), 0);
      if (redacted === null) return block;
      changed = true;
      return { ...block, input: parsedInput(redacted) };
    });
    if (changed) out = { ...body, content };
  } else return null;
  return findings.length === 0 ? null : { body: out, findings, blocked };
}

/** A redacted input read back; one that no longer parses is replaced by one that says so (never the original). */
function parsedInput(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { redacted: text };
  }
}
