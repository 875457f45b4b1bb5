import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { ChildSpan } from './child-span.js';

export type SpanResource = ReadableSpan['resource'];
export type SpanScope = ReadableSpan['instrumentationScope'];

/** Finished spans being collected for one export, encoded as they are added. */
export interface SpanBatch {
  readonly contentType: string;
  /** Spans added since the last `take`. */
  readonly count: number;
  /** An SDK span (a request's). */
  add(span: ReadableSpan): void;
  /** A request's child span, encoded now: `child` is reused by the caller and not kept. */
  addChild(resource: SpanResource, scope: SpanScope, child: ChildSpan): void;
  /** The export body for every span added; the batch starts empty again. */
  take(): string | Buffer;
}

/**
 * A batch's spans grouped as OTLP nests them: by resource, then by instrumentation scope; `G` is what a format
 * keeps per group (its encoded spans).
 */
export class ScopeGroups<G extends { scope: SpanScope | null }> {
  private groups = new Map<SpanResource, Map<string, G>>();

  constructor(private readonly create: () => G) {}

  /** The group of a resource and scope, created when it is the first (keeping the scope as it was then). */
  of(resource: SpanResource, scope: SpanScope): G {
    let scopes = this.groups.get(resource);
    if (!scopes) this.groups.set(resource, (scopes = new Map()));
    const scopeKey = scope.version ? `${scope.name}\0${scope.version}` : scope.name;
    let group = scopes.get(scopeKey);
    if (group === undefined) {
      scopes.set(scopeKey, (group = this.create()));
      group.scope = scope;
    }
    return group;
  }

  /** Every resource with its scopes' groups, then empty. */
  take(): Array<{ resource: SpanResource; scopes: G[] }> {
    const out = [...this.groups].map(([resource, scopes]) => ({ resource, scopes: [...scopes.values()] }));
    this.groups = new Map();
    return out;
  }
}
