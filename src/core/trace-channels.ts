/**
 * Tracing channels (node:diagnostics_channel) the pipeline publishes on, for tracers and profilers to subscribe
 * to. With no subscriber a publish costs one property read. Channel names are process-wide.
 */
import { channel, tracingChannel, type Channel, type TracingChannel } from 'node:diagnostics_channel';
import type { RequestContext } from './context.js';
import type { StageOutcome } from './events.js';

/**
 * What a stage's tracing channel publishes (`tollgate:stage:<name>`): `start` when the stage begins on a request,
 * `end` when its `run` returned, `asyncStart` when its answer starts flowing back (the first event, or the end of
 * an empty answer), `asyncEnd` when it finished however it ended (answered, failed, or the client left:
 * `cancelled`), and `error` with the error.
 */
export interface StageTraceMessage {
  requestId: string;
  stage: string;
  ctx: RequestContext;
  outcome?: StageOutcome;
  cancelled?: boolean;
  error?: unknown;
}

/**
 * What the upstream channel (`tollgate:upstream`) publishes for each upstream attempt: `start` once the request
 * to send is built and before it is signed, with its `headers` still writable (a tracer sets `traceparent` there
 * so the provider's spans join the trace), and `asyncEnd` when the attempt ended, with the upstream status
 * (null when none came) and the error code of a failed attempt.
 */
export interface UpstreamTraceMessage {
  requestId: string;
  ctx: RequestContext;
  provider: string;
  model: string;
  /** 1 for the first attempt of the request, counting retries and fallbacks. */
  attempt: number;
  /** The attempt goes to a fallback, not to the primary choice. */
  fallback: boolean;
  headers: Record<string, string>;
  ok?: boolean;
  status?: number | null;
  errorCode?: string | null;
}

const stageChannels = new Map<string, TracingChannel<StageTraceMessage>>();

/** The tracing channel of a stage name (created once per name). */
export function stageChannel(name: string): TracingChannel<StageTraceMessage> {
  let channel = stageChannels.get(name);
  if (!channel) {
    channel = tracingChannel<StageTraceMessage>(`tollgate:stage:${name}`);
    stageChannels.set(name, channel);
  }
  return channel;
}

export const upstreamChannel: TracingChannel<UpstreamTraceMessage> = tracingChannel<UpstreamTraceMessage>('tollgate:upstream');

/** What the request channel (`tollgate:request`) publishes at `start`, when the pipeline begins on a request. */
export interface RequestTraceMessage {
  requestId: string;
  ctx: RequestContext;
}

/**
 * Published once per request as the pipeline starts it (a tracer opens the request's span there, under the
 * client's `traceparent`); the request's end is its terminal bus event (`request.completed` / `request.failed`).
 */
export const requestChannel: TracingChannel<RequestTraceMessage> = tracingChannel<RequestTraceMessage>('tollgate:request');

/**
 * What the refusal channel (`tollgate:request:refused`) publishes for a model call refused before the pipeline took
 * it (a body that is not JSON, too large, or not a valid request), just before its `request.failed`: the client's
 * trace context, so a tracer can give the call its span under the client's trace.
 */
export interface RefusedRequestMessage {
  requestId: string;
  traceparent: string | null;
  tracestate: string | null;
}

export const refusalChannel: Channel<RefusedRequestMessage> = channel('tollgate:request:refused') as Channel<RefusedRequestMessage>;
