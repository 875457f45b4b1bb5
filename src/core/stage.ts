import type { Observable } from 'rxjs';
import type { ResponseEvent } from './canonical.js';
import type { RequestContext } from './context.js';

/** Calls the rest of the pipeline; its Observable is the response as the inner stages produce it. */
export type Next = () => Observable<ResponseEvent>;

/**
 * A stage is one layer of the onion. Request-side work happens before it calls `next()`; response-side work
 * maps over the Observable `next()` returns (so it sees streamed and non-streamed answers alike). A stage may
 * answer without calling `next()` (cache hit, guardrail block) or fail with a GatewayError.
 * Unsubscribing (client gone) must release whatever the stage holds.
 */
export interface Stage {
  readonly name: string;
  run(ctx: RequestContext, next: Next): Observable<ResponseEvent>;
  /**
   * Whether the stage has anything to do for this request, asked as the request reaches it (after the stages before
   * it ran their request side). `false`: the request passes straight on to the next stage, as if `run` had returned
   * `next()`, and the stage is not there for it: no `stage.completed`, no tracing channel, no stage span. Leave it out
   * for a stage that always works; it must be cheap and must not change the request (its `run` decides the rest, and
   * may still pass a request on untouched).
   */
  appliesTo?(ctx: RequestContext): boolean;
  /**
   * Releases what this stage holds (an index, an exporter) when its config version is retired: superseded by a
   * newer version and no request still running on it. Called once; errors are logged, never thrown at a request.
   */
  close?(): void | Promise<void>;
}

