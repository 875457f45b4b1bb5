/**
 * The stream guard: applies a scanner to an answer as it streams, so that a match split across chunks is caught
 * before any of it reaches the client.
 *
 * How it holds back. Every rule has a window: the longest text it must see at once to recognise a match (a card
 * number's 37 characters, an email's 254; a JWT or a private key block is recognised from its first couple of hundred
 * characters and then held whole). The guard keeps the last `lookBehind` characters unreleased (default: the
 * largest window among the rules that apply to output, plus a small margin for the patterns' look-ahead checks,
 * capped at 256). On each push it rescans only what it holds (plus 16 characters of released text, as context for
 * boundary checks) and releases everything up to `lookBehind` from the end, except that the release point moves back
 * to the start of any match (or chain of overlapping matches) that crosses it. So:
 *
 * - no part of a match is released before the whole match is known (a redacted span is released as its
 *   placeholder, a blocked one never);
 * - the released text equals `scanner.redact(whole, scanner.scan(whole))` for the whole answer, and the first
 *   block is the same finding, because a match starting more than `lookBehind` characters before the end of the
 *   text seen so far can no longer change (built-in patterns are bounded, and each start position is judged on its
 *   own neighbourhood), and overlaps resolve the same on either side of a point no match crosses;
 * - a chunk is held back by at most `lookBehind` characters, or longer while a match is still growing across the
 *   release point (a long JWT, a private key block), up to `maxHold` (default 16 KiB). Past that the growing match is
 *   cut: the part seen is redacted or blocked, and what follows is scanned afresh (a key body cut this way would
 *   not be recognised: keep `maxHold` above the largest secret expected).
 *
 * What is not exact: operator regexes whose matches exceed the look-behind (set `max_match_length` on the rule),
 * a `lookBehind` set below a rule's window, and `prompt_injection` rules applied to output (its score sums signals
 * over a whole text; the guard scores each rescanned window).
 *
 * One guard per independent text. A chat completion stream with several choices (`n > 1`) interleaves texts, and a
 * tool call's arguments are a text of their own: keep one guard per choice index, and one per tool call (keyed by
 * choice index and tool call index or id), for instance in a `StreamGuards` below. Call `end()` on each when its
 * stream finishes (its `finish_reason` arrives, or the upstream ends) and send what it releases.
 */
import type { Scanner } from './scanner.js';
import type { Finding, GuardrailDirection } from './types.js';

/** Released characters kept in front of each rescan as context for boundary checks (e.g. "no letter precedes"). */
export const STREAM_CONTEXT = 16;
/** The default longest hold while a match grows across the release point. */
export const DEFAULT_MAX_HOLD = 16_384;

export interface StreamGuardOptions {
  /** Characters held back at the end of the text seen so far; default `scanner.lookBehind(direction)` (at most 256). */
  lookBehind?: number;
  /** The longest text held while a match grows across the release point; default 16384, never below `lookBehind`. */
  maxHold?: number;
  /** Which rules apply: those for `output` (default) or `input`. */
  direction?: GuardrailDirection;
}

export interface StreamGuardResult {
  /** Text to send on now: possibly empty, redactions applied. */
  release: string;
  /** Findings settled by this call (redactions applied in `release`, flags, the block), spans in stream offsets. */
  findings: Finding[];
  /** The block finding once the stream is blocked (on this call and every later one); send nothing more after it. */
  blocked: Finding | null;
}

export interface StreamGuard {
  push(delta: string): StreamGuardResult;
  /** Releases the rest once the stream is complete. Pushing after `end()` throws. */
  end(): StreamGuardResult;
  /** Characters held back now. */
  readonly held: number;
  readonly blocked: Finding | null;
}

const nothing = (): StreamGuardResult => ({ release: '', findings: [], blocked: null });

/**
 * Where to cut the held text: `limit` moved back to the start of any cluster of overlapping findings that straddles
 * it (a cluster is merged from findings sorted by start while each starts before the running end).
 */
function cutPoint(findings: readonly Finding[], limit: number): number {
  const sorted = [...findings].sort((a, b) => a.start - b.start);
  let clusterStart = -1;
  let clusterEnd = -1;
  for (const finding of sorted) {
    if (finding.start >= limit) break;
    if (finding.start < clusterEnd) clusterEnd = Math.max(clusterEnd, finding.end);
    else {
      clusterStart = finding.start;
      clusterEnd = finding.end;
    }
  }
  return clusterStart >= 0 && clusterStart < limit && clusterEnd > limit ? clusterStart : limit;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

export function createStreamGuard(scanner: Scanner, options: StreamGuardOptions = {}): StreamGuard {
  const direction = options.direction ?? 'output';
  const lookBehind = Math.max(0, Math.floor(options.lookBehind ?? scanner.lookBehind(direction)));
  const maxHold = Math.max(options.maxHold ?? DEFAULT_MAX_HOLD, lookBehind);
  const active = scanner.appliesTo(direction);
  let context = '';
  let held = '';
  /** Stream offset of `held[0]`. */
  let base = 0;
  let blocked: Finding | null = null;
  let ended = false;

  function step(final: boolean): StreamGuardResult {
    if (blocked !== null) return { release: '', findings: [], blocked };
    if (!active) {
      const release = held;
      base += held.length;
      held = '';
      return release === '' ? nothing() : { release, findings: [], blocked: null };
    }
    if (!final && held.length <= lookBehind) return nothing();

    const text = context + held;
    const offset = context.length;
    // Findings in held-text coordinates.
    const raw = scanner.detect(text, offset, direction).map((finding) => ({ ...finding, start: finding.start - offset, end: finding.end - offset }));

    let cut = held.length;
    let forced = false;
    if (!final) {
      cut = held.length - lookBehind;
      if (cut > 0 && isHighSurrogate(held.charCodeAt(cut - 1))) cut--;
      const safe = cutPoint(raw, cut);
      // A match still growing past `maxHold` is cut where it is (see the module comment).
      if (safe < held.length - maxHold) forced = true;
      else cut = safe;
    }
    const committed = raw.filter((finding) => finding.start < cut).map((finding) => (forced && finding.end > cut ? { ...finding, end: cut } : finding));
    const settled = scanner.resolve(committed);
    const block = settled.find((finding) => finding.action === 'block') ?? null;
    const releaseEnd = block === null ? cut : block.start;

    const parts: string[] = [];
    const findings: Finding[] = [];
    let cursor = 0;
    for (const finding of settled) {
      if (finding.end > releaseEnd && finding !== block) continue;
      findings.push({ ...finding, start: finding.start + base, end: finding.end + base });
      if (finding.action !== 'redact') continue;
      parts.push(held.slice(cursor, finding.start), placeholderOf(scanner, finding));
      cursor = finding.end;
    }
    parts.push(held.slice(cursor, releaseEnd));

    if (block !== null) {
      blocked = { ...block, start: block.start + base, end: block.end + base };
      held = '';
    } else {
      context = (context + held.slice(0, releaseEnd)).slice(-STREAM_CONTEXT);
      held = held.slice(releaseEnd);
      base += releaseEnd;
    }
    return { release: parts.join(''), findings, blocked };
  }

  return new GuardHandle(
    (delta) => {
      if (ended) throw new Error('stream guard: push after end()');
      if (blocked !== null || delta === '') return step(false);
      held += delta;
      return step(false);
    },
    () => {
      if (ended) return nothing();
      const result = step(true);
      ended = true;
      return result;
    },
    () => held.length,
    () => blocked,
  );
}

/**
 * A stream guard's face, its state read through the closures of createStreamGuard. A class, not an object literal
 * with getters: V8 turns each such literal into a dictionary-mode object of its own (`--log-maps` shows one
 * normalisation per guard), and the guards are made per stream and read per chunk.
 */
class GuardHandle implements StreamGuard {
  constructor(
    readonly push: (delta: string) => StreamGuardResult,
    readonly end: () => StreamGuardResult,
    private readonly heldNow: () => number,
    private readonly blockedNow: () => Finding | null,
  ) {}

  get held(): number {
    return this.heldNow();
  }

  get blocked(): Finding | null {
    return this.blockedNow();
  }
}

/** The placeholder the scanner's `redact` would use for this finding. */
function placeholderOf(scanner: Scanner, finding: Finding): string {
  return scanner.rules.find((rule) => rule.name === finding.rule)?.placeholder ?? `[REDACTED:${finding.kind}]`;
}

/**
 * Separate guards for the separate texts of one response, created on first use: key them by what identifies a
 * text, e.g. `choice:0`, `choice:0:tool:1` (choice index and tool call index; a tool call's arguments are a text of
 * their own). `endAll()` ends every guard that has not ended, for when the upstream stream finishes.
 */
export class StreamGuards {
  private readonly guards = new Map<string, StreamGuard>();

  constructor(
    private readonly scanner: Scanner,
    private readonly options: StreamGuardOptions = {},
  ) {}

  get(key: string): StreamGuard {
    let guard = this.guards.get(key);
    if (guard === undefined) {
      guard = createStreamGuard(this.scanner, this.options);
      this.guards.set(key, guard);
    }
    return guard;
  }

  push(key: string, delta: string): StreamGuardResult {
    return this.get(key).push(delta);
  }

  end(key: string): StreamGuardResult {
    return this.get(key).end();
  }

  /** Ends every guard; the results keyed as the guards are. */
  endAll(): Map<string, StreamGuardResult> {
    return new Map([...this.guards].map(([key, guard]) => [key, guard.end()]));
  }

  /** The first blocked guard's finding, if any. */
  get blocked(): Finding | null {
    for (const guard of this.guards.values()) if (guard.blocked !== null) return guard.blocked;
    return null;
  }
}
