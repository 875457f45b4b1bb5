import { isSpanContextValid, ROOT_CONTEXT, SamplingDecision, SpanKind, trace, type Attributes, type Context, type SamplingResult, type SpanContext } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { EventBus } from '../../bus/bus.js';
import type { RuntimeConfig, TracingSettings } from '../../core/config.js';
import { answeredFromCache, type GatewayEvents, type RequestSummary } from '../../core/events.js';
import { StageTimeline, type StageEnd } from '../../core/stage-timeline.js';
import { refusalChannel, requestChannel, upstreamChannel, type RefusedRequestMessage, type RequestTraceMessage, type UpstreamTraceMessage } from '../../core/trace-channels.js';
import type { Log } from '../../log.js';
import type { Outbound } from '../../network/outbound-network.js';
import { GatewayError, loggedMessage } from '../../core/errors.js';
import { redactPath, redactSecrets } from '../../core/redact-secrets.js';
import { genAIProviderName } from './genai-provider.js';
import { createSpanExport, type SpanExport } from './span-export.js';
import { newSpanId, newTraceId, spanIdWords, traceIdHex, traceIdOf, traceparentOf, type AttributeList, type SpanRecord, type TraceId } from './span-record.js';

const propagator = new W3CTraceContextPropagator();
const headerGetter = {
  keys: (carrier: Record<string, string>) => Object.keys(carrier),
  get: (carrier: Record<string, string>, key: string) => carrier[key],
};
const NO_LINKS: [] = [];
/**
 * What the sampler is shown of a new request span's attributes: nothing. The samplers tollgate builds (parent-based
 * over always-on, always-off or a trace-id ratio) decide on the trace id and the parent alone, and the attributes
 * are kept as a flat list (AttributeList), not the object a sampler reads.
 */
const NO_ATTRIBUTES: Attributes = Object.freeze({});
/** The decision for a new trace at a ratio of 1 (see SpanExport.samplesEveryNewTrace). */
const SAMPLED: SamplingResult = Object.freeze({ decision: SamplingDecision.RECORD_AND_SAMPLED });

const stageNames = new Map<string, string>();
/** The stage timeline of a request that is not recorded: never written (the runner is not given it). */
const NO_STAGES = new StageTimeline();

/** `stage <name>`, built once per stage name. */
function stageSpanName(stage: string): string {
  let name = stageNames.get(stage);
  if (name === undefined) {
    name = `stage ${stage}`;
    if (stageNames.size < 1_000) stageNames.set(stage, name);
  }
  return name;
}

/**
 * A stage span's attributes by how the stage ended: one that passed the request on is the common case and says
 * nothing; the one that answered, failed or saw the client leave is marked (fewer bytes per span at 100% sampling).
 */
const STAGE_OUTCOME: Record<StageEnd, AttributeList | null> = {
  passed: null,
  answered: ['tollgate.stage.outcome', 'answered'],
  failed: ['tollgate.stage.outcome', 'failed'],
  cancelled: ['tollgate.stage.outcome', 'cancelled'],
};

/**
 * A request span's attribute names, each followed by a slot for its value (written when the request ends, see
 * requestAttributes); a null value is left out of the export. The last name is `error.type` or `tollgate.cancelled`.
 */
const REQUEST_ATTRIBUTES: AttributeList = [
  'gen_ai.operation.name', null,
  'gen_ai.request.model', null,
  'tollgate.dialect', null,
  'tollgate.request_id', null,
  'tollgate.stream', null,
  'url.path', null,
  'http.response.status_code', null,
  'gen_ai.provider.name', null,
  'tollgate.provider', null,
  'gen_ai.response.model', null,
  'gen_ai.usage.input_tokens', null,
  'gen_ai.usage.output_tokens', null,
  'gen_ai.response.finish_reasons', null,
  'tollgate.route', null,
  'tollgate.key', null,
  'tollgate.team', null,
  'tollgate.cost_usd', null,
  'tollgate.fallback', null,
  'tollgate.attempts', null,
  'tollgate.time_to_first_token_ms', null,
  'tollgate.cache', null,
  'tollgate.cancelled', null,
];

/** An upstream attempt span's attribute names and value slots (see attemptAttributes). */
const ATTEMPT_ATTRIBUTES: AttributeList = [
  'gen_ai.operation.name', null,
  'gen_ai.provider.name', null,
  'tollgate.provider', null,
  'gen_ai.request.model', null,
  'tollgate.attempt', null,
  'tollgate.fallback', null,
  'http.response.status_code', null,
  'error.type', null,
];

/** The span of a call refused before the pipeline: its attribute names and value slots (see refusedSpan). */
const REFUSED_ATTRIBUTES: AttributeList = [
  'gen_ai.operation.name', null,
  'gen_ai.request.model', null,
  'tollgate.dialect', null,
  'tollgate.request_id', null,
  'url.path', null,
  'http.response.status_code', null,
  'error.type', null,
];

/** How long shutdown waits for the last spans to be exported. */
const SHUTDOWN_FLUSH_MS = 2_000;

type Handler = (message: unknown) => void;
type ChannelHandlers = { start: Handler; end: Handler; asyncStart: Handler; asyncEnd: Handler; error: Handler };

/** A subscriber to some of a tracing channel's events; Node subscribes only the ones given (its types want all five). */
function handlers(some: Partial<ChannelHandlers>): ChannelHandlers {
  return some as ChannelHandlers;
}

/**
 * One request's spans: the request span itself, and its stages as the runner recorded them in the request's stage
 * timeline (no object per span; see SpanRecord).
 */
interface RequestSpans extends Pick<SpanRecord, 'traceId' | 'traceState' | 'idHigh' | 'idLow' | 'parentHigh' | 'parentLow' | 'startedAt'> {
  // The request span's own fields are a span record's: its id (the parent of its outermost stage), the client's
  // span from `traceparent` as its parent (0 and 0 when the request started the trace), and its arrival time.
  /** Sampled: its spans are recorded (else only the trace context travels on, as not sampled). */
  recording: boolean;
  // What the request span's attributes take from the request's start. The attribute list itself is made when the
  // request ends, in a list the tracer reuses: made at the start, it lived as long as the request and was copied
  // by every young-generation collection that found it in flight (bench/RESULTS.md, issue 16).
  operation: string;
  /** The requested model, secrets redacted. */
  model: string;
  dialect: string;
  requestId: string;
  stream: boolean;
  /** The request's path, redacted; null when it has none. */
  path: string | null;
  /** The request's stage runs, written by the runner; each becomes a span when the request ends. */
  stages: StageTimeline;
  /**
   * The stage spans' ids, two words per run in the timeline's order, given out as they are first needed (an
   * upstream attempt's parent is named while its stage still runs; the rest when the request ends).
   */
  stageIds: number[];
  /** How many of `stageIds` are this request's (the list is reused: see RequestTracer.spare). */
  stageIdCount: number;
  /**
   * Its upstream attempts, in the order they started. One that has ended waits here to be encoded with the
   * request's other spans when the request ends (at once, while the encoder is hot, instead of alone between
   * requests, where it cost several times as much); one that ends after its request did is encoded as it ends.
   */
  attempts: AttemptSpan[];
  /** How many of `attempts` are this request's. */
  attemptCount: number;
  /** Its stage timeline is its own, made by this tracer, so the record can be reused once the request ended. */
  reusable: boolean;
  /** The request's spans were handed to the batch (an attempt still running then goes on its own when it ends). */
  ended: boolean;
  /** The config the request runs under (its providers' vendors name `gen_ai.provider.name`). */
  config: RuntimeConfig | null;
  /**
   * The model the last ended attempt's answer named (a dated snapshot), read when the attempt ends; undefined when
   * none did. Kept as a string, not the request's context: a span list holding every request's context (body,
   * answer) until its end doubled the scavenger's work at ten connections.
   */
  answeredModel: string | undefined;
  // A request whose spans wait to be encoded (see RequestTracer.pending): when it ended, how, and its terminal event.
  endedAt: number;
  error: string | null;
  summary: RequestSummary | GatewayEvents['request.failed'] | null;
}

/** An upstream attempt's span while the call runs. */
interface AttemptSpan {
  /** Its request's spans (an attempt can end after its request did, when the client left). */
  request: RequestSpans;
  idHigh: number;
  idLow: number;
  parentHigh: number;
  parentLow: number;
  startedAt: number;
  /** NaN while the call runs. */
  endedAt: number;
  // Its attributes' values (made into a list only when it is encoded, as a request span's are).
  operation: string;
  /** `gen_ai.provider.name`: the provider's vendor in the GenAI conventions. */
  genAIProvider: string;
  provider: string;
  /** The model asked of the provider, secrets redacted. */
  model: string;
  attempt: number;
  fallback: boolean;
  /** The upstream's HTTP status; null while the call runs or when none came. */
  status: number | null;
  /** `error.type` of a failed attempt. */
  errorType: string | null;
  /** The client left while the call ran. */
  cancelled: boolean;
  /** Set when the attempt failed (see SpanRecord.error). */
  error: string | null;
}

/** An upstream channel message with the attempt spans tracers keep on it between its start and end. */
type TracedAttempt = UpstreamTraceMessage & Record<symbol, AttemptSpan | undefined>;

/**
 * Traces as a subscriber: one span per request (under the client's `traceparent` when it sent one), a child per
 * stage (nested as the onion nests them), and a client span per upstream attempt whose context goes to the
 * provider as `traceparent`. A request's span starts on the request tracing channel, where a recorded request is
 * given a stage timeline for the runner to write; attempts come from the upstream channel; the request's span and
 * its stages' end on the terminal bus event, which carries what the request did (GenAI attributes, cost,
 * fallback). Off (nothing subscribed, no cost) while no endpoint is set; a change of the tracing settings applies
 * to requests that start after it.
 */
export class RequestTracer {
  private exporter: SpanExport | null = null;
  private settingsKey = '';
  private readonly requests = new Map<string, RequestSpans>();
  /**
   * The request this gateway's bus announced last, whose span starts next: the tracing channels are process-wide,
   * and another gateway in the same process (an embedder's, a test's) publishes on them too. The runner announces
   * a request and publishes its start together, so one slot is enough (a set of ids grew and shrank its table
   * with every request).
   */
  private announced: string | null = null;
  /**
   * Where this tracer keeps an attempt's span on its channel message (a property of its own: another gateway's
   * tracer in the process sees the same messages).
   */
  private readonly attemptSlot = Symbol('tollgate.attemptSpan');
  /** The record every finished span is handed to the batch in (encoded at once, never kept). */
  private readonly record: SpanRecord = {
    traceId: { hex: '', w0: 0, w1: 0, w2: 0, w3: 0 },
    traceState: undefined,
    idHigh: 0,
    idLow: 0,
    parentHigh: 0,
    parentLow: 0,
    name: '',
    nameTail: null,
    kind: SpanKind.INTERNAL,
    startedAt: 0,
    endedAt: 0,
    attributes: null,
    error: null,
  };
  /** The attribute lists of the request span and the attempt span being encoded (filled, encoded at once, reused). */
  private readonly requestList: AttributeList = [...REQUEST_ATTRIBUTES];
  private readonly attemptList: AttributeList = [...ATTEMPT_ATTRIBUTES];
  private readonly refusedList: AttributeList = [...REFUSED_ATTRIBUTES];
  /** Span records of ended requests, for new requests to reuse (see release). */
  private readonly spare: RequestSpans[] = [];
  /**
   * Ended requests whose spans are not encoded yet. They are encoded together, up to ENCODE_BATCH at a time or
   * ENCODE_DELAY_MS after the first: one request's seven spans encoded on their own, between requests, found the
   * encoder's code and data out of the CPU's caches and cost several times what the same work costs in a run
   * (bench/RESULTS.md, issue 16). The export waits a second for its batch anyway, so this delays no span's arrival
   * noticeably.
   */
  private readonly pending: RequestSpans[] = [];
  private encodeTimer: NodeJS.Timeout | null = null;
  private encodeSoon: NodeJS.Immediate | null = null;
  private readonly encodePending = (): void => {
    if (this.encodeTimer) clearTimeout(this.encodeTimer);
    if (this.encodeSoon) clearImmediate(this.encodeSoon);
    this.encodeTimer = null;
    this.encodeSoon = null;
    const pending = this.pending;
    for (let index = 0; index < pending.length; index++) {
      const spans = pending[index] as RequestSpans;
      const summary = spans.summary;
      spans.summary = null;
      try {
        this.endRequest(spans, spans.endedAt, spans.error, summary);
      } catch (err) {
        this.log.warn({ err }, 'tracing: a span could not be recorded');
      }
    }
    pending.length = 0;
  };
  private readonly stops: Array<() => void> = [];
  private subscribed = false;
  /**
   * The trace context of calls refused before the pipeline, from the refusal channel until their `request.failed`
   * (published just before it). The channel is process-wide: another gateway's refusals are dropped past a bound.
   */
  private readonly refused = new Map<string, RefusedRequestMessage>();
  private readonly onRefused = (message: unknown): void => {
    if (this.refused.size >= 1_000) this.refused.clear();
    const refused = message as RefusedRequestMessage;
    this.refused.set(refused.requestId, refused);
  };

  // Only the events used are subscribed (Node skips the others), so the rest cost nothing when published.
  private readonly onRequest = handlers({ start: (message) => this.guard(this.requestStarted, message as RequestTraceMessage) });
  private readonly onUpstream = handlers({
    start: (message) => this.guard(this.attemptStarted, message as UpstreamTraceMessage),
    asyncEnd: (message) => this.guard(this.attemptEnded, message as TracedAttempt),
  });

  constructor(
    private readonly bus: EventBus,
    private readonly log: Log,
    private readonly version: string,
    /** The gateway's way out: spans go to the collector through the same proxy and CAs as every outbound call. */
    private readonly outbound: Outbound,
  ) {}

  /** Applies tracing settings: starts, restarts (another endpoint or sampler) or stops the export. */
  configure(settings: TracingSettings): void {
    const key = JSON.stringify([settings.endpoint, settings.headers, settings.serviceName, settings.resourceAttributes, settings.sampleRatio, settings.followParent, settings.protocol, settings.compression]);
    if (key === this.settingsKey) return;
    this.settingsKey = key;
    // Turned off: the spans of requests still running end (and are exported) before the export stops.
    if (settings.endpoint === null && this.subscribed) this.unsubscribe();
    // Spans of ended requests go to the export of the settings they ran under.
    this.encodePending();
    const previous = this.exporter;
    this.exporter = settings.endpoint === null ? null : createSpanExport({ ...settings, endpoint: settings.endpoint }, this.version, this.log, this.outbound);
    if (previous) void previous.processor.shutdown().catch((err: unknown) => this.log.warn({ err }, 'tracing: could not flush spans of the previous settings'));
    if (this.exporter && !this.subscribed) this.subscribe();
    // The collector's origin only: a token in the URL's path or query stays out of the log.
    if (this.exporter && settings.endpoint) this.log.info({ collector: new URL(settings.endpoint).origin, sampleRatio: settings.sampleRatio, protocol: settings.protocol, compression: settings.compression ?? 'none' }, 'tracing: exporting spans over OTLP/HTTP');
  }

  /** Ends the spans of requests still open, flushes the queue and stops the export. */
  async close(): Promise<void> {
    this.unsubscribe();
    const exporter = this.exporter;
    this.exporter = null;
    if (!exporter) return;
    // A collector that is down must not hold the shutdown for the exporter's retries: the queue is given up after a while.
    let timer: NodeJS.Timeout | undefined;
    const flushed = exporter.processor.shutdown().catch((err: unknown) => this.log.warn({ err }, 'tracing: could not flush spans at shutdown'));
    await Promise.race([flushed, new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_FLUSH_MS)))]);
    clearTimeout(timer);
    // Exports still waiting on the collector are cut short: left running, they held the gateway's outbound pool, and
    // with it the process's exit, for their whole timeout.
    exporter.processor.abandon();
  }

  private subscribe(): void {
    this.subscribed = true;
    requestChannel.subscribe(this.onRequest);
    upstreamChannel.subscribe(this.onUpstream);
    refusalChannel.subscribe(this.onRefused);
    this.stops.push(
      this.bus.on('request.received', (event: GatewayEvents['request.received']) => (this.announced = event.requestId)),
      this.bus.on('request.completed', (event: GatewayEvents['request.completed']) => this.guard(this.requestEnded, event)),
      this.bus.on('request.failed', (event: GatewayEvents['request.failed']) => this.guard(this.requestEnded, event)),
    );
  }

  /** Stops listening; the spans of requests still running end now (their terminal event will not be heard). */
  private unsubscribe(): void {
    if (!this.subscribed) return;
    this.subscribed = false;
    requestChannel.unsubscribe(this.onRequest);
    upstreamChannel.unsubscribe(this.onUpstream);
    refusalChannel.unsubscribe(this.onRefused);
    this.refused.clear();
    for (const stop of this.stops.splice(0)) stop();
    for (const spans of this.requests.values()) this.endRequest(spans, performance.now(), null, null);
    this.requests.clear();
    this.encodePending();
    this.announced = null;
    // Tracing is off: the records kept for reuse are let go (made again if it is turned back on).
    this.spare.length = 0;
  }

  /** A subscriber error would surface as an uncaught exception from the publisher: never let one escape. */
  private guard<T>(work: (this: RequestTracer, message: T) => void, message: T): void {
    try {
      work.call(this, message);
    } catch (err) {
      this.log.warn({ err }, 'tracing: a span could not be recorded');
    }
  }

  private requestStarted({ requestId, ctx }: RequestTraceMessage): void {
    const exporter = this.exporter;
    if (requestId !== this.announced || !exporter) return;
    this.announced = null;
    const { parentContext, parent } = clientParent(ctx.hints.traceparent, ctx.hints.tracestate);
    const traceId = parent ? traceIdOf(parent.traceId) : newTraceId();
    const model = redactSecrets(ctx.request.model);
    // The SDK's sampler decides, as its tracer would: a sampled parent is followed, new traces at the ratio.
    const sampling =
      parent || !exporter.samplesEveryNewTrace ? exporter.sampler.shouldSample(parentContext, traceIdHex(traceId), `${ctx.operation} ${model}`, SpanKind.SERVER, NO_ATTRIBUTES, NO_LINKS) : SAMPLED;
    const [parentHigh, parentLow] = parent ? spanIdWords(parent.spanId) : [0, 0];
    const recording = sampling.decision === SamplingDecision.RECORD_AND_SAMPLED;
    // The runner records the stages of a request that is recorded, in the timeline of a record this tracer reuses
    // (another gateway's tracer in this process may have given the request one already: it serves both then).
    let spans: RequestSpans;
    if (!recording) spans = blankSpans(NO_STAGES);
    else if (ctx.timings.stages) spans = blankSpans(ctx.timings.stages);
    else {
      spans = this.spare.pop() ?? blankSpans(new StageTimeline());
      spans.reusable = true;
      ctx.timings.stages = spans.stages;
    }
    spans.recording = recording;
    spans.traceId = traceId;
    spans.traceState = (sampling.traceState ?? parent?.traceState)?.serialize() || undefined;
    spans.parentHigh = parentHigh;
    spans.parentLow = parentLow;
    spans.operation = ctx.operation;
    spans.model = model;
    spans.dialect = ctx.dialect;
    spans.requestId = requestId;
    spans.stream = ctx.stream;
    spans.path = ctx.path ? redactPath(ctx.path) : null;
    spans.startedAt = ctx.startedAt;
    spans.ended = false;
    spans.config = ctx.config;
    newSpanId(spans);
    this.requests.set(requestId, spans);
  }

  /** Gives the stage runs up to `count` their span ids (once each). */
  private stageIdsUpTo(spans: RequestSpans, count: number): void {
    const ids = spans.stageIds;
    while (spans.stageIdCount < 2 * count) {
      newSpanId(this.record);
      ids[spans.stageIdCount++] = this.record.idHigh;
      ids[spans.stageIdCount++] = this.record.idLow;
    }
  }

  /** Hands every stage run of the request to the batch as a span; a run still going ends at `endedAt`. */
  private endStages(spans: RequestSpans, endedAt: number): void {
    const { stages, stageIds } = spans;
    this.stageIdsUpTo(spans, stages.length);
    const child = this.record;
    child.traceId = spans.traceId;
    child.traceState = spans.traceState;
    child.kind = SpanKind.INTERNAL;
    child.nameTail = null;
    // A failure goes out through every stage: its message is redacted once, as the request's own is.
    let failure: unknown;
    let failureMessage: string | null = null;
    for (let index = 0; index < stages.length; index++) {
      const parent = stages.parents[index] as number;
      child.idHigh = stageIds[2 * index] as number;
      child.idLow = stageIds[2 * index + 1] as number;
      child.parentHigh = parent === -1 ? spans.idHigh : (stageIds[2 * parent] as number);
      child.parentLow = parent === -1 ? spans.idLow : (stageIds[2 * parent + 1] as number);
      child.name = stageSpanName(stages.names[index] as string);
      child.startedAt = stages.starts[index] as number;
      const ended = stages.ends[index] as number;
      child.endedAt = Number.isNaN(ended) ? endedAt : ended;
      const outcome = stages.outcomes[index];
      child.attributes = outcome ? STAGE_OUTCOME[outcome] : null;
      const error = stages.errors[index];
      if (error !== undefined && (failureMessage === null || error !== failure)) {
        failure = error;
        // An upstream's error may quote what the client sent (a key pasted into a model name).
        failureMessage = redactSecrets(errorMessage(error), (spans.config as RuntimeConfig).settings.logBodies.redact);
      }
      child.error = error === undefined ? null : failureMessage;
      this.exporter?.processor.onEnd(child);
    }
  }

  private attemptStarted(message: UpstreamTraceMessage): void {
    const spans = this.requests.get(message.requestId);
    if (!spans) return;
    if (!spans.recording) {
      // Not sampled: the provider still joins the trace, as not sampled, under the request's span id.
      message.headers.traceparent = traceparentOf(spans.traceId, spans.idHigh, spans.idLow, false);
      if (spans.traceState) message.headers.tracestate = spans.traceState;
      return;
    }
    // Its parent is the innermost stage still running (the call stage), else the request.
    const stage = spans.stages.innermostRunning();
    if (stage !== -1) this.stageIdsUpTo(spans, stage + 1);
    const model = redactSecrets(message.model);
    // A reused request record brings the attempt records of the request before (all ended: see endRequest).
    const attempt = (spans.attempts[spans.attemptCount] ??= blankAttempt(spans));
    spans.attemptCount++;
    attempt.parentHigh = stage === -1 ? spans.idHigh : (spans.stageIds[2 * stage] as number);
    attempt.parentLow = stage === -1 ? spans.idLow : (spans.stageIds[2 * stage + 1] as number);
    attempt.startedAt = performance.now();
    attempt.endedAt = Number.NaN;
    attempt.operation = message.ctx.operation;
    attempt.genAIProvider = semconvProvider(message.ctx.config, message.provider);
    attempt.provider = message.provider;
    attempt.model = model;
    attempt.attempt = message.attempt;
    attempt.fallback = message.fallback;
    attempt.status = null;
    attempt.errorType = null;
    attempt.cancelled = false;
    attempt.error = null;
    newSpanId(attempt);
    (message as TracedAttempt)[this.attemptSlot] = attempt;
    // The provider's own spans (if it traces) join this trace under the attempt.
    message.headers.traceparent = traceparentOf(spans.traceId, attempt.idHigh, attempt.idLow, true);
    if (spans.traceState) message.headers.tracestate = spans.traceState;
  }

  private attemptEnded(message: TracedAttempt): void {
    const attempt = message[this.attemptSlot];
    if (!attempt) return;
    message[this.attemptSlot] = undefined;
    attempt.endedAt = performance.now();
    const answered = message.ctx.upstream?.answeredModel;
    if (answered !== undefined) attempt.request.answeredModel = answered;
    attempt.status = message.status ?? null;
    if (!message.ok && message.errorCode === 'client_cancelled') {
      // The client left: the attempt was cut short, it did not fail (as its request span says).
      attempt.cancelled = true;
    } else if (!message.ok) {
      attempt.errorType = message.errorCode ?? (message.status ? String(message.status) : 'error');
      attempt.error = message.errorCode ?? 'attempt failed';
    }
    // Encoded with its request's spans when the request ends; now if the request already has.
    if (attempt.request.ended) this.endAttempt(attempt);
  }

  /** Hands a finished attempt to the batch as a client span. */
  private endAttempt(attempt: AttemptSpan): void {
    const spans = attempt.request;
    const child = this.record;
    child.traceId = spans.traceId;
    child.traceState = spans.traceState;
    child.idHigh = attempt.idHigh;
    child.idLow = attempt.idLow;
    child.parentHigh = attempt.parentHigh;
    child.parentLow = attempt.parentLow;
    child.name = attempt.operation;
    child.nameTail = attempt.model;
    child.kind = SpanKind.CLIENT;
    child.startedAt = attempt.startedAt;
    child.endedAt = attempt.endedAt;
    const list = this.attemptList;
    list[1] = attempt.operation;
    list[3] = attempt.genAIProvider;
    list[5] = attempt.provider;
    list[7] = attempt.model;
    list[9] = attempt.attempt;
    list[11] = attempt.fallback;
    list[13] = attempt.status;
    // The last slot is the failure's type, or whether the client left.
    list[14] = attempt.cancelled ? 'tollgate.cancelled' : 'error.type';
    list[15] = attempt.cancelled || attempt.errorType;
    child.attributes = list;
    child.error = attempt.error;
    this.exporter?.processor.onEnd(child);
  }

  private requestEnded(event: RequestSummary | GatewayEvents['request.failed']): void {
    const spans = this.requests.get(event.requestId);
    if (!spans) {
      const refused = this.refused.get(event.requestId);
      if (refused && 'type' in event) {
        this.refused.delete(event.requestId);
        this.refusedSpan(refused, event);
      }
      return;
    }
    this.requests.delete(event.requestId);
    if (!spans.recording) return;
    const failure = 'type' in event ? event : null;
    // The request ended at start + duration; its terminal event may come a little later (settling a cancelled stream).
    const endedAt = spans.startedAt + event.durationMs;
    const error = failure ? serverSpanError(event.status, failure.message) : null;
    // Deferred only when nothing will write to the record again (its own timeline, every stage and attempt ended):
    // else its spans are encoded now, as they stand at the end.
    if (!spans.reusable || !spans.stages.allEnded() || this.attemptRunning(spans)) {
      this.endRequest(spans, endedAt, error, event);
      return;
    }
    spans.endedAt = endedAt;
    spans.error = error;
    spans.summary = event;
    this.pending.push(spans);
    // Never encoded inside the terminal event's emit: another subscriber of the same event may still read the request.
    if (this.pending.length >= ENCODE_BATCH) this.encodeSoon ??= setImmediate(this.encodePending);
    else if (this.encodeTimer === null) {
      this.encodeTimer = setTimeout(this.encodePending, ENCODE_DELAY_MS);
      this.encodeTimer.unref();
    }
  }

  /** An upstream attempt of the request has not ended yet. */
  private attemptRunning(spans: RequestSpans): boolean {
    for (let index = 0; index < spans.attemptCount; index++) if (Number.isNaN((spans.attempts[index] as AttemptSpan).endedAt)) return true;
    return false;
  }

  /**
   * The request span's attributes, in the tracer's reused list: what its start gave, then what its terminal event
   * says (none when the request's span ends without one, at an unsubscribe). A null value is left out of the export.
   */
  private requestAttributes(spans: RequestSpans, event: RequestSummary | GatewayEvents['request.failed'] | null): AttributeList {
    const list = this.requestList;
    list[1] = spans.operation; // gen_ai.operation.name
    list[3] = spans.model; // gen_ai.request.model
    list[5] = spans.dialect; // tollgate.dialect
    list[7] = spans.requestId; // tollgate.request_id
    list[9] = spans.stream; // tollgate.stream
    list[11] = spans.path; // url.path
    if (event === null) {
      for (let at = 13; at < list.length; at += 2) list[at] = null;
      list[list.length - 2] = 'tollgate.cancelled';
      return list;
    }
    const failure = 'type' in event ? event : null;
    let at = 13;
    list[at] = event.status; // http.response.status_code
    list[(at += 2)] = event.provider === null ? null : semconvProvider(spans.config as RuntimeConfig, event.provider); // gen_ai.provider.name
    list[(at += 2)] = event.provider; // tollgate.provider
    // The model the answer named (a dated snapshot), else the one asked of the provider.
    const answered = spans.answeredModel;
    list[(at += 2)] = answered === undefined ? event.upstreamModel : redactSecrets(answered); // gen_ai.response.model
    // An answer from the response cache used no model tokens (its usage is the stored answer's, charged when it was
    // bought): reported here, every trace store summing gen_ai.usage would count them again, as the metrics do not.
    const usage = answeredFromCache(event) ? null : event.usage;
    list[(at += 2)] = usage?.input_tokens; // gen_ai.usage.input_tokens
    list[(at += 2)] = usage?.output_tokens; // gen_ai.usage.output_tokens
    list[(at += 2)] = event.finishReasons.length > 0 ? event.finishReasons : null; // gen_ai.response.finish_reasons
    list[(at += 2)] = event.route; // tollgate.route
    list[(at += 2)] = event.keyId; // tollgate.key
    list[(at += 2)] = event.teamId; // tollgate.team
    list[(at += 2)] = event.costUsd; // tollgate.cost_usd
    list[(at += 2)] = event.fallback; // tollgate.fallback
    list[(at += 2)] = event.attempts; // tollgate.attempts
    list[(at += 2)] = event.stream ? event.firstTokenMs : null; // tollgate.time_to_first_token_ms
    list[(at += 2)] = event.cache; // tollgate.cache
    // The last slot is the failure's type, or whether the client left.
    list[at + 1] = failure ? 'error.type' : 'tollgate.cancelled';
    list[(at += 2)] = failure ? (failure.code ?? failure.type) : event.status === 499 || null;
    return list;
  }

  /**
   * The one span of a model call refused before the pipeline took it (no stage ran, no upstream was called): under
   * the client's trace when it sent one, sampled as any request is.
   */
  private refusedSpan(refused: RefusedRequestMessage, event: GatewayEvents['request.failed']): void {
    const exporter = this.exporter;
    if (!exporter) return;
    const { parentContext, parent } = clientParent(refused.traceparent, refused.tracestate);
    const traceId = parent ? traceIdOf(parent.traceId) : newTraceId();
    const name = event.model ? `${event.operation} ${event.model}` : event.operation;
    const sampling = exporter.sampler.shouldSample(parentContext, traceIdHex(traceId), name, SpanKind.SERVER, NO_ATTRIBUTES, NO_LINKS);
    if (sampling.decision !== SamplingDecision.RECORD_AND_SAMPLED) return;
    const [parentHigh, parentLow] = parent ? spanIdWords(parent.spanId) : [0, 0];
    const record = this.record;
    newSpanId(record);
    const endedAt = performance.now();
    record.traceId = traceId;
    record.traceState = (sampling.traceState ?? parent?.traceState)?.serialize() || undefined;
    record.parentHigh = parentHigh;
    record.parentLow = parentLow;
    record.name = event.operation;
    record.nameTail = event.model || null;
    record.kind = SpanKind.SERVER;
    record.startedAt = endedAt - event.durationMs;
    record.endedAt = endedAt;
    const list = this.refusedList;
    list[1] = event.operation; // gen_ai.operation.name
    list[3] = event.model || null; // gen_ai.request.model
    list[5] = event.dialect; // tollgate.dialect
    list[7] = event.requestId; // tollgate.request_id
    list[9] = event.path || null; // url.path
    list[11] = event.status; // http.response.status_code
    list[13] = event.code ?? event.type; // error.type
    record.attributes = list;
    record.error = serverSpanError(event.status, event.message);
    exporter.processor.onEnd(record);
  }

  /** Ends a request's stage spans, then its own (at `endedAt`, failed with `error` when set). */
  private endRequest(spans: RequestSpans, endedAt: number, error: string | null, event: RequestSummary | GatewayEvents['request.failed'] | null): void {
    if (!spans.recording) return;
    spans.ended = true;
    this.endStages(spans, endedAt);
    let running = false;
    for (let index = 0; index < spans.attemptCount; index++) {
      const attempt = spans.attempts[index] as AttemptSpan;
      if (Number.isNaN(attempt.endedAt)) running = true;
      else this.endAttempt(attempt);
    }
    const record = this.record;
    record.traceId = spans.traceId;
    record.traceState = spans.traceState;
    record.idHigh = spans.idHigh;
    record.idLow = spans.idLow;
    record.parentHigh = spans.parentHigh;
    record.parentLow = spans.parentLow;
    record.name = spans.operation;
    record.nameTail = spans.model;
    record.kind = SpanKind.SERVER;
    record.startedAt = spans.startedAt;
    record.endedAt = endedAt;
    record.attributes = this.requestAttributes(spans, event);
    record.error = error;
    this.exporter?.processor.onEnd(record);
    // Kept for another request when nothing will write to it again: no stage run and no upstream attempt still going.
    if (spans.reusable && !running && spans.stages.allEnded() && this.spare.length < MAX_SPARE) this.release(spans);
  }

  /**
   * Empties a recorded request's span record into the spares. A request's record and its stage timeline lived as long
   * as the request, so young-generation collections that found them in flight copied them (half of what tracing
   * made survive a collection was these): reused, they are made once.
   */
  private release(spans: RequestSpans): void {
    spans.stages.reset();
    spans.stageIdCount = 0;
    // The attempt records stay, for the next request's attempts (every field is set again when one starts).
    spans.attemptCount = 0;
    spans.traceId = NO_TRACE;
    spans.requestId = '';
    spans.model = '';
    spans.path = null;
    spans.answeredModel = undefined;
    spans.config = null;
    this.spare.push(spans);
  }
}

/** Ended requests whose spans are encoded together at most (see RequestTracer.pending). */
const ENCODE_BATCH = 32;
/** How long an ended request's spans wait at most to be encoded with others. */
const ENCODE_DELAY_MS = 100;
/** Recorded requests' span records kept for reuse at most (enough for the requests in flight at a steady load). */
const MAX_SPARE = 256;
const NO_TRACE: TraceId = Object.freeze({ hex: null, w0: 0, w1: 0, w2: 0, w3: 0 }) as TraceId;

/** An upstream attempt's span record, empty, of `request` (its fields are set as the attempt starts). */
function blankAttempt(request: RequestSpans): AttemptSpan {
  return {
    request,
    idHigh: 0,
    idLow: 0,
    parentHigh: 0,
    parentLow: 0,
    startedAt: 0,
    endedAt: Number.NaN,
    operation: '',
    genAIProvider: '',
    provider: '',
    model: '',
    attempt: 0,
    fallback: false,
    status: null,
    errorType: null,
    cancelled: false,
    error: null,
  };
}

/** A request's span record, empty, with `stages` as its timeline (its fields are set as the request starts). */
function blankSpans(stages: StageTimeline): RequestSpans {
  return {
    recording: false,
    traceId: NO_TRACE,
    traceState: undefined,
    idHigh: 0,
    idLow: 0,
    parentHigh: 0,
    parentLow: 0,
    operation: '',
    model: '',
    dialect: '',
    requestId: '',
    stream: false,
    path: null,
    startedAt: 0,
    stages,
    stageIds: [],
    stageIdCount: 0,
    attempts: [],
    attemptCount: 0,
    reusable: false,
    ended: false,
    config: null,
    answeredModel: undefined,
    endedAt: 0,
    error: null,
    summary: null,
  };
}

const NO_PARENT: { parentContext: Context; parent: undefined } = Object.freeze({ parentContext: ROOT_CONTEXT, parent: undefined });

/** The client's span from its `traceparent` (and `tracestate`), as the context the sampler reads; none when absent or invalid. */
function clientParent(traceparent: string | null, tracestate: string | null): { parentContext: Context; parent: SpanContext | undefined } {
  if (traceparent === null) return NO_PARENT;
  const carrier: Record<string, string> = { traceparent };
  if (tracestate !== null) carrier.tracestate = tracestate;
  const parentContext = propagator.extract(ROOT_CONTEXT, carrier, headerGetter);
  const parent = trace.getSpanContext(parentContext);
  return { parentContext, parent: parent && isSpanContextValid(parent) ? parent : undefined };
}

/** `gen_ai.provider.name` of a configured provider: its vendor's name in the GenAI conventions (see genai-provider.ts). */
function semconvProvider(config: RuntimeConfig, provider: string): string {
  const vendor = config.providers.get(provider)?.vendor.id;
  return vendor === undefined ? provider : genAIProviderName(vendor);
}

/**
 * A server span's error status: set for a 5xx only. The HTTP conventions leave a server span's status unset for a
 * 4xx (the client's mistake, a refusal or a limit, not the server failing), so error-rate views over a trace
 * store count the gateway's failures, not its 401s and 429s; the failure's type stays in `error.type`.
 */
function serverSpanError(status: number, message: string): string | null {
  return status >= 500 ? message : null;
}

/** A stage's error as the operator reads it (with what a client is not shown: see GatewayError.operatorMessage). */
function errorMessage(error: unknown): string {
  if (error instanceof GatewayError) return loggedMessage(error);
  return error instanceof Error ? error.message : String(error);
}
