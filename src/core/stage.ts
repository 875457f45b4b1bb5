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
   * Releases what this stage holds (an index, an exporter) when its config version is retired: superseded by a
   * newer version and no request still running on it. Called once; errors are logged, never thrown at a request.
   */
  close?(): void | Promise<void>;
}

