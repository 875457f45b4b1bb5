/**
 * An MCP tool result checked by the output rules (a tool called directly, whose result goes to the client): the
 * text of its content blocks (`text` blocks, an embedded resource's `text`) and every string value of its structured
 * content. Nothing found (or only flags): the same objects come back, so the result goes out as the server gave it.
 */
import { isRecord } from '../core/is-record.js';
import type { TextScanner } from './request-guard.js';
import type { Finding } from './types.js';

export interface ToolResultVerdict {
  /** Every finding acted on (flags and redactions; a block's findings too), for reporting. */
  findings: Finding[];
  /** The first block finding, or null. */
  blocked: Finding | null;
  content: unknown[];
  structuredContent: Record<string, unknown> | undefined;
}

/** Scans one text; returns it redacted (the same string when nothing was redacted). */
function checkText(text: string, scanner: TextScanner, found: Finding[]): string {
  const findings = scanner.scan(text);
  if (findings.length === 0) return text;
  found.push(...findings);
  return findings.some((finding) => finding.action === 'redact') ? scanner.redact(text, findings) : text;
}

/** A JSON value with each string (values, not keys) checked; the same value when nothing changed. */
function checkValue(value: unknown, scanner: TextScanner, found: Finding[], depth: number): unknown {
  if (typeof value === 'string') return checkText(value, scanner, found);
  // Structured content is parsed JSON (no cycles); the depth bound only guards against a pathological nesting.
  if (depth > 64) return value;
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((item) => {
      const next = checkValue(item, scanner, found, depth + 1);
      changed ||= next !== item;
      return next;
    });
    return changed ? out : value;
  }
  if (isRecord(value)) {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const next = checkValue(item, scanner, found, depth + 1);
      changed ||= next !== item;
      out[key] = next;
    }
    return changed ? out : value;
  }
  return value;
}

/** One content block checked: a `text` block's text, an embedded resource's text; images, audio and links as they are. */
function checkBlock(block: unknown, scanner: TextScanner, found: Finding[]): unknown {
  if (!isRecord(block)) return block;
  if (block.type === 'text' && typeof block.text === 'string') {
    const text = checkText(block.text, scanner, found);
    return text === block.text ? block : { ...block, text };
  }
  if (block.type === 'resource' && isRecord(block.resource) && typeof block.resource.text === 'string') {
    const text = checkText(block.resource.text, scanner, found);
    return text === block.resource.text ? block : { ...block, resource: { ...block.resource, text } };
  }
  return block;
}

export function guardToolResult(content: readonly unknown[], structuredContent: Record<string, unknown> | undefined, scanner: TextScanner): ToolResultVerdict {
  const findings: Finding[] = [];
  let changed = false;
  const checked = content.map((block) => {
    const next = checkBlock(block, scanner, findings);
    changed ||= next !== block;
    return next;
  });
  const structured = structuredContent === undefined ? undefined : (checkValue(structuredContent, scanner, findings, 0) as Record<string, unknown>);
  const blocked = findings.find((finding) => finding.action === 'block') ?? null;
  return { findings, blocked, content: changed ? checked : (content as unknown[]), structuredContent: structured };
}
