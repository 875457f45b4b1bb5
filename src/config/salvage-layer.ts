import type { z } from 'zod';
import { isRecord } from '../core/is-record.js';
import { configFileSchema, type ConfigFile } from './schema.js';

/** Rounds of leaving parts out before giving up on a stored layer (each round settles every issue the check found). */
const MAX_ROUNDS = 16;

/** How deep a part left out may be: `routes.<name>.targets`, `settings.routing.retry`; shallower when that is all there is. */
const PART_DEPTH = 3;

type Path = ReadonlyArray<PropertyKey>;

/** Removes what `path` names from `root` (a key of an object, an element of an array); whether it was there. */
function removeAt(root: unknown, path: Path): boolean {
  let node: unknown = root;
  for (const key of path.slice(0, -1)) {
    if (Array.isArray(node) && typeof key === 'number') node = node[key];
    else if (isRecord(node) && typeof key === 'string') node = node[key];
    else return false;
  }
  const last = path.at(-1);
  if (Array.isArray(node) && typeof last === 'number' && last < node.length) {
    // Marked, not spliced: the other issues' indexes in this array stay right until the round ends.
    node[last] = REMOVED;
    return true;
  }
  if (isRecord(node) && typeof last === 'string' && Object.hasOwn(node, last)) {
    delete node[last];
    return true;
  }
  return false;
}

const REMOVED = Symbol('removed');

/** Takes the marked elements out of every array in `node`. */
function compact(node: unknown): void {
  if (Array.isArray(node)) {
    for (let i = node.length - 1; i >= 0; i--) if (node[i] === REMOVED) node.splice(i, 1);
    for (const item of node) compact(item);
  } else if (isRecord(node)) for (const value of Object.values(node)) compact(value);
}

function describePath(path: Path): string {
  return path.map((key) => (typeof key === 'number' ? `[${key}]` : `.${String(key)}`)).join('').replace(/^\./, '');
}

/**
 * A stored API layer that no longer passes the config's checks (a check made stricter by an upgrade, a record written
 * by hand), made to pass by leaving out the parts the checks refuse: the route, provider, rule or setting an issue
 * is in (down to three levels: `routes.chat.targets`), or a key the schema does not know. One bad route must not
 * cost the operator every route, provider and alert set through the API. Each part left out is named with why; null
 * when nothing acceptable is left after a few rounds.
 */
export function salvageLayer(document: Record<string, unknown>): { document: ConfigFile; dropped: string[] } | null {
  const working = structuredClone(document);
  const dropped: string[] = [];
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const parsed = configFileSchema.safeParse(working);
    if (parsed.success) return dropped.length > 0 ? { document: parsed.data, dropped } : null;
    let removedAny = false;
    for (const issue of parsed.error.issues) {
      for (const path of partsOf(issue)) {
        // The part at the depth wanted, else a shallower one: a part already gone means its container is at fault.
        for (let depth = Math.min(path.length, PART_DEPTH); depth >= 1; depth--) {
          const part = path.slice(0, depth);
          if (removeAt(working, part)) {
            dropped.push(`${describePath(part)}: ${issue.message}`);
            removedAny = true;
            break;
          }
        }
      }
    }
    compact(working);
    if (!removedAny) return null;
  }
  return null;
}

/** The paths an issue condemns: its own, or for keys the schema does not know, each of those keys. */
function partsOf(issue: z.core.$ZodIssue): Path[] {
  if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => [...issue.path, key]);
  return [issue.path];
}
