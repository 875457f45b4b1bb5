/** Defaults chosen so that `npm start` with nothing configured is a working gateway. */
export const DEFAULTS = {
  host: '0.0.0.0',
  port: 8080,
  dataDir: './data',
  configFile: 'tollgate.config.yaml',
  // Large enough for a few base64 images in a chat request; OpenAI's own limit is far above typical use.
  maxBodyBytes: 20 * 1024 * 1024,
  firstByteTimeoutMs: 30_000,
  totalTimeoutMs: 600_000,
  // Reasoning models can think for minutes between headers and the first token; silence longer than this is a stall.
  idleTimeoutMs: 300_000,
  shutdownGraceMs: 30_000,
  // Well under the idle timeouts of common proxies and load balancers (nginx and AWS ALB 60 s, Cloudflare 100 s).
  streamKeepaliveMs: 15_000,
  // Long enough for a large body on a slow link; the whole request (headers and body) must arrive within it.
  requestTimeoutMs: 60_000,
  headersTimeoutMs: 30_000,
  logLevel: 'info',
  logRetentionDays: 30,
  // As OpenAI keeps a stored Response (store: true) for 30 days.
  responseRetentionDays: 30,
  responseMaxEntries: 100_000,
  // A long agent loop's turns with big tool outputs add up; this bounds the disk they take.
  responseMaxBytes: 1024 * 1024 * 1024,
  // Far above any real completion or embeddings answer; bounds what one upstream can make tollgate hold.
  maxResponseBytes: 32 * 1024 * 1024,
  // Enough for most chat bodies' gist; kept bodies are size-capped so the log stays small.
  logBodyMaxBytes: 16 * 1024,
  cacheTtlSeconds: 3_600,
  cacheMaxEntries: 100_000,
  /**
   * USE lite's threshold with the lexical check (bench/RESULTS.md, "Semantic cache calibration"): precision 0.96,
   * recall 0.83 on the labelled set; 0.90 gains 0.01 of precision for a quarter of the recall (paraphrases score
   * from 0.77 up), and what still passes at any threshold are word-order swaps, which no threshold separates.
   */
  cacheSemanticThreshold: 0.75,
  // Alerts: a webhook that is down for a while still gets the alert (8 attempts over about four minutes).
  alertTimeoutMs: 10_000,
  alertMaxAttempts: 8,
  alertInitialDelayMs: 1_000,
  alertMaxDelayMs: 300_000,
  alertCooldownMs: 600_000,
  alertMaxQueue: 10_000,
  pagerDutyEventsUrl: 'https://events.pagerduty.com/v2/enqueue',
  alertWindowMs: 300_000,
  alertMinRequests: 10,
  alertLatencyForMs: 60_000,
} as const;
