import type { Observable } from 'rxjs';
import { throwError } from 'rxjs';
import type { RuntimeConfig } from '../core/config.js';
import type { ResponseEvent } from '../core/canonical.js';
import { anonymousRule, checkVirtualKey } from '../governance/key-check.js';
import { isRecord } from '../is-record.js';
import type { Settings } from '../core/config.js';
import type { RequestContext } from '../core/context.js';
import type { Next, Stage } from '../core/stage.js';
import type { StageDeps, StageFactory } from '../pipeline/stage.js';

/**
 * Identifies the caller by virtual key (the rules are in governance/key-check.ts) and reports refusals on the
 * bus as `auth.rejected`.
 */
class AuthStage implements Stage {
  readonly name = 'auth';

  constructor(
    private readonly settings: Settings,
    private readonly deps: StageDeps,
  ) {}

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    const { bus, governance } = this.deps;
    // The scope lets a key's model list be read against all the request can reach (its route's targets and
    // fallbacks, its own fallbacks, routing rules' destinations), which the route stage decides after auth.
    const scope = { config: ctx.config, fallbacks: ctx.requestFallbacks, metadata: isRecord(ctx.request.metadata) ? ctx.request.metadata : null };
    const check = checkVirtualKey(governance, anonymousRule(this.settings, ctx.fromRemote), ctx.credential, ctx.request.model, scope);
    if (!check.ok) {
      bus.emit('auth.rejected', { requestId: ctx.id, reason: check.reason, keyId: check.keyId });
      return throwError(() => check.error);
    }
    if (check.key) ctx.identity = { key: check.key, team: check.key.team ? (governance.getTeamRecord(check.key.team) ?? null) : null };
    return next();
  }
}

const authStage: StageFactory = {
  name: 'auth',
  create: (config: RuntimeConfig, deps) => new AuthStage(config.settings, deps),
};

export default authStage;
