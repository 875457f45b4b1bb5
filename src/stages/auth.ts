import type { Observable } from 'rxjs';
import { throwError } from 'rxjs';
import type { RuntimeConfig } from '../config/runtime.js';
import type { ResponseEvent } from '../dialects/openai/types.js';
import { GatewayError } from '../errors.js';
import { modelAllowed } from '../governance/model-patterns.js';
import { VIRTUAL_KEY_PREFIX } from '../governance/types.js';
import type { RequestContext } from '../pipeline/context.js';
import type { Next, Stage, StageDeps, StageFactory } from '../pipeline/stage.js';

function unauthorized(message: string, code: string): GatewayError {
  return new GatewayError({ status: 401, type: 'invalid_request_error', code, message });
}

/**
 * Identifies the caller by virtual key. A credential that looks like one of ours (`tg-...`) must be a live
 * key in every mode; other credentials (or none) are anonymous, which `require_virtual_key` refuses.
 */
class AuthStage implements Stage {
  readonly name = 'auth';

  constructor(
    private readonly requireKey: boolean,
    private readonly deps: StageDeps,
  ) {}

  run(ctx: RequestContext, next: Next): Observable<ResponseEvent> {
    const failure = this.identify(ctx);
    return failure ? throwError(() => failure) : next();
  }

  private identify(ctx: RequestContext): GatewayError | null {
    const { bus, governance } = this.deps;
    const credential = ctx.credential;
    const reject = (reason: 'unknown_key' | 'disabled_key' | 'expired_key' | 'missing_key' | 'model_not_allowed', keyId: string | null, error: GatewayError): GatewayError => {
      bus.emit('auth.rejected', { requestId: ctx.id, reason, keyId });
      return error;
    };
    if (!credential || !credential.startsWith(VIRTUAL_KEY_PREFIX)) {
      if (!this.requireKey) return null;
      return reject('missing_key', null, unauthorized('A virtual key is required: send it as Authorization: Bearer <key> or x-api-key.', 'missing_api_key'));
    }
    const key = governance.findKeyBySecret(credential);
    if (!key) return reject('unknown_key', null, unauthorized('Incorrect API key provided: the virtual key is not known (it may have been rotated or deleted).', 'invalid_api_key'));
    if (key.disabled) return reject('disabled_key', key.id, unauthorized(`The virtual key '${key.name}' is disabled.`, 'key_disabled'));
    if (key.expires_at && Date.parse(key.expires_at) <= Date.now()) {
      return reject('expired_key', key.id, unauthorized(`The virtual key '${key.name}' expired at ${key.expires_at}.`, 'key_expired'));
    }
    if (!modelAllowed(key.models, ctx.request.model)) {
      return reject(
        'model_not_allowed',
        key.id,
        new GatewayError({
          status: 403,
          type: 'permission_error',
          code: 'model_not_allowed',
          param: 'model',
          message: `The virtual key '${key.name}' may not use model '${ctx.request.model}'. Allowed: ${key.models.join(', ')}.`,
        }),
      );
    }
    ctx.identity = { key, team: key.team ? (governance.getTeamRecord(key.team) ?? null) : null };
    return null;
  }
}

const authStage: StageFactory = {
  name: 'auth',
  create: (config: RuntimeConfig, deps) => new AuthStage(config.settings.requireVirtualKey, deps),
};

export default authStage;
