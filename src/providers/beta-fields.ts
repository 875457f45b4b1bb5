import { isRecord } from '../core/is-record.js';
import { platformServes, type ClaudePlatform } from './platform-betas.js';

/**
 * A cache breakpoint's `scope` (`cache_control: {type: 'ephemeral', scope: 'global'}`), which Claude Code writes on its
 * system prompt and tools with this beta. Claude refuses the field without the beta ("cache_control.ephemeral.scope:
 * Extra inputs are not permitted"), and a platform that does not serve the beta never gets it (platform-betas.ts).
 */
const CACHE_SCOPE_BETA = 'prompt-caching-scope-2026-01-05';

type Json = Record<string, unknown>;

/** The block without its breakpoint's scope; the block itself when it has none. */
function unscoped(block: unknown): unknown {
  if (!isRecord(block) || !isRecord(block.cache_control) || !('scope' in block.cache_control)) return block;
  const { scope: _scope, ...cacheControl } = block.cache_control;
  return { ...block, cache_control: cacheControl };
}

/** The list with `change` applied to each item; the list itself when nothing changed (or when it is not one). */
function mapped(list: unknown, change: (item: unknown) => unknown): unknown {
  if (!Array.isArray(list)) return list;
  let out: unknown[] | null = null;
  for (let i = 0; i < list.length; i++) {
    const item: unknown = list[i];
    const next = change(item);
    if (next !== item) (out ??= list.slice())[i] = next;
  }
  return out ?? list;
}

/** A content block without a scope, nor one in the blocks of a tool result. */
function unscopedBlock(block: unknown): unknown {
  const own = unscoped(block);
  if (!isRecord(own) || own.type !== 'tool_result') return own;
  const content = mapped(own.content, unscoped);
  return content === own.content ? own : { ...own, content };
}

function unscopedMessage(message: unknown): unknown {
  if (!isRecord(message)) return message;
  const content = mapped(message.content, unscopedBlock);
  return content === message.content ? message : { ...message, content };
}

/** The body's lists whose blocks may carry a breakpoint, and how each item is read. */
const SCOPED_LISTS: ReadonlyArray<[string, (item: unknown) => unknown]> = [
  ['system', unscoped],
  ['tools', unscoped],
  ['messages', unscopedMessage],
];

/**
 * An Anthropic client's Messages body as a platform serving Claude can take it: the fields only a beta makes valid
 * are left out when the platform does not serve that beta (the beta itself is left out, see platformBetas), since
 * Claude refuses the whole request for them. Only a cache breakpoint's scope is such a field today: without it the
 * breakpoint still caches, for this account. Everything else, and a body holding none, is returned as it is.
 */
export function withoutUnservedBetaFields(platform: ClaudePlatform, body: Json): Json {
  if (platformServes(platform, CACHE_SCOPE_BETA)) return body;
  let out: Json | null = null;
  for (const [key, change] of SCOPED_LISTS) {
    const next = mapped(body[key], change);
    if (next !== body[key]) (out ??= { ...body })[key] = next;
  }
  return out ?? body;
}
