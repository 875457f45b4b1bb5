import { BehaviorSubject, type Observable } from 'rxjs';
import type { ConfigFile } from './schema.js';
import { resolveRuntimeConfig, type RuntimeConfig } from './runtime.js';
import type { Env } from './secret-ref.js';

/**
 * Holds the one current config and publishes each new version. A request reads `current()` once when it
 * starts and keeps that object, so a change never alters a request in flight.
 */
export class ConfigStore {
  private readonly subject: BehaviorSubject<RuntimeConfig>;

  constructor(
    file: ConfigFile,
    private readonly env: Env,
  ) {
    this.subject = new BehaviorSubject(resolveRuntimeConfig(file, env, 1));
  }

  current(): RuntimeConfig {
    return this.subject.getValue();
  }

  get changes(): Observable<RuntimeConfig> {
    return this.subject.asObservable();
  }

  /** Validates by resolving first, so a bad config throws and the running one stays. */
  apply(file: ConfigFile): RuntimeConfig {
    const next = resolveRuntimeConfig(file, this.env, this.current().version + 1);
    this.subject.next(next);
    return next;
  }
}
