import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** Finished spans being collected for one export, encoded as they are added. */
export interface SpanBatch {
  readonly contentType: string;
  /** Spans added since the last `take`. */
  readonly count: number;
  add(span: ReadableSpan): void;
  /** The export body for every span added; the batch starts empty again. */
  take(): string | Buffer;
}

/**
 * A batch's spans grouped as OTLP nests them: by resource, then by instrumentation scope; `G` is what a format
 * keeps per group (its encoded spans).
 */
export class ScopeGroups<G> {
  private groups = new Map<ReadableSpan['resource'], Map<string, G>>();

  constructor(private readonly create: () => G) {}

  /** The group of a span's resource and scope, created when it is the first. */
  of(span: ReadableSpan): G {
    let scopes = this.groups.get(span.resource);
    if (!scopes) this.groups.set(span.resource, (scopes = new Map()));
    const scopeKey = `${span.instrumentationScope.name}\0${span.instrumentationScope.version ?? ''}`;
    let group = scopes.get(scopeKey);
    if (group === undefined) scopes.set(scopeKey, (group = this.create()));
    return group;
  }

  /** Every resource with its scopes' groups (the scope as the first span of each group had it), then empty. */
  take(): Array<{ resource: ReadableSpan['resource']; scopes: G[] }> {
    const out = [...this.groups].map(([resource, scopes]) => ({ resource, scopes: [...scopes.values()] }));
    this.groups = new Map();
    return out;
  }
}
