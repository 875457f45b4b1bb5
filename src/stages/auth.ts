import type { Observable } from 'rxjs';
import { throwError } from 'rxjs';
import type { ResponseEvent } from '../core/canonical.js';
import { anonymousRule, checkVirtualKey } from '../governance/key-check.js';
import { INTERNAL_CALL } from '../core/guardrail-keys.js';
import type { Settings } from '../core/config.js';
import { requestMetadata, type Identity, type RequestContext } from '../core/context.js';
import type { VirtualKeyRecord } from '../core/identity.js';
import type { Next, Stage } from '../core/stage.js';
import { definePlugin } from '../core/plugin.js';
import type { EventBus } from '../bus/bus.js';
import type { GovernanceStore } from '../governance/governance-store.js';
import { BUS, GOVERNANCE } from '../services.js';

/**
 * Identifies the caller by virtual key (the rules are in governance/key-check.ts) and reports refusals on the
 * bus as `auth.rejected`.
 */
class AuthStage implements Stage {
  readonly name = 'auth';

  constructor(
    private readonly settings: Settings,
    private readonly deps: { bus: EventBus; governance: GovernanceStore },
  ) {}

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    const { bus, governance } = this.deps;
    // The scope lets a key's model list be read against all the request can reach (its route's targets and
    // fallbacks, its own fallbacks, routing rules' destinations), which the route stage decides after auth.
    const scope = { operation: ctx.operation, config: ctx.config, fallbacks: ctx.requestFallbacks, metadata: requestMetadata(ctx) };
    // A request the gateway makes for itself (a guardrail's moderation call) is the operator's, not a client's: it is
    // let through as an in-process caller even where clients must present a virtual key.
    const anonymous = ctx.extensions.has(INTERNAL_CALL) && ctx.credential === null ? 'allow' : anonymousRule(this.settings, ctx.fromRemote);
    const check = checkVirtualKey(governance, anonymous, ctx.credential, ctx.request.model, scope);
    if (!check.ok) {
      bus.emit('auth.rejected', { requestId: ctx.id, reason: check.reason, keyId: check.keyId });
      // A known key refused (disabled, expired, a model it may not use) is named in the request's log entry and
      // usage, as its other requests are; the request ends here, so nothing runs as that key.
      const known = check.keyId === null ? undefined : governance.getKeyRecord(check.keyId);
      if (known) ctx.identity = identityOf(governance, known);
      return throwError(() => check.error);
    }
    if (check.key) ctx.identity = identityOf(governance, check.key);
    return next();
  }
}

function identityOf(governance: GovernanceStore, key: VirtualKeyRecord): Identity {
  return { key, team: key.team ? (governance.getTeamRecord(key.team) ?? null) : null };
}

export default definePlugin({
  name: 'auth',
  requires: [BUS, GOVERNANCE],
  create: (_options, config, services) => new AuthStage(config.settings, { bus: services.get(BUS), governance: services.get(GOVERNANCE) }),
});
