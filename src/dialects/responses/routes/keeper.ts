import type { RequestContext } from '../../../core/context.js';
import type { Log } from '../../../log.js';
import type { ResponseStore } from '../../../store/response-store.js';
import type { ResponseKeeper } from './respond.js';

const DAY_MS = 24 * 60 * 60_000;

/**
 * Whose a stored Response is: the virtual key's that made it (a key's responses are its own, not its team's: keys
 * of one team are often different apps or users), or `anonymous` for calls without a key.
 */
export function scopeOf(keyId: string | null | undefined): string {
  return keyId ? `key:${keyId}` : 'anonymous';
}

/**
 * Keeps a turn's Response once it is whole, under the caller's scope (the auth stage's identity) for
 * `settings.response_retention_days`: one tollgate rendered with its own input items and the turn it continues (so a
 * later turn, on any provider, can continue the conversation), one an upstream kept (OpenAI) as its id and provider only. Nothing waits for the
 * commit: the store reads its own writes back at once.
 */
export function responseKeeper(store: ResponseStore, ctx: RequestContext, turn: { inputItems: Array<Record<string, unknown>>; continues?: string | null; conversationItems?: Array<Record<string, unknown>> }, log: Log): ResponseKeeper {
  const expiresAt = (): number => store.nowMs() + ctx.config.settings.responseRetentionDays * DAY_MS;
  const scope = (): string => scopeOf(ctx.identity?.key.id);
  const failed = (err: unknown): void => log.error({ err, requestId: ctx.id }, 'could not keep a Responses answer');
  return {
    rendered(response) {
      if (typeof response.id !== 'string') return;
      // Its own input items and a link to the turn it continues, not the whole conversation again: a long
      // conversation's turns then take space growing with its length, not with its square.
      const link = turn.continues ? { previous: turn.continues } : {};
      store.put(response.id, { scope: scope(), expires_at: expiresAt(), response, input_items: turn.inputItems, ...link }, turn.conversationItems).catch(failed);
    },
    native(id) {
      // The same id again is one answer served twice (a shared cache hit): it stays whose it was first.
      const before = store.find(id);
      if (before && before.scope !== scope()) return;
      const upstream = ctx.upstream;
      const where = upstream ? { provider: upstream.provider, upstream_model: upstream.upstreamModel, provider_key_id: upstream.keyId ?? null } : {};
      store.put(id, { scope: scope(), expires_at: expiresAt(), response: null, input_items: [], ...where }).catch(failed);
    },
  };
}
