// The soak's steady mixed load: an open-loop request rate (a slow gateway gets the same offered load, not less)
// over a bounded number of requests in flight, cycling through the kinds of traffic a real gateway sees. Every
// answer is checked against what its kind must get; anything else is an unexpected outcome.
import { Agent, fetch } from 'undici';
import { BLOCKED_MARKER } from './soak-config.js';

export type TrafficKind = 'json' | 'stream' | 'cancelled' | 'upstream-error' | 'guardrail-block';

/** One cycle of 20 requests: mostly served answers, some cancelled by the client, some failing on purpose. */
const CYCLE: TrafficKind[] = [
  'json', 'stream', 'json', 'cancelled', 'stream', 'json', 'upstream-error', 'stream', 'json', 'guardrail-block',
  'json', 'stream', 'cancelled', 'json', 'stream', 'upstream-error', 'json', 'stream', 'cancelled', 'guardrail-block',
];

/** Distinct questions: the pool repeats, so part of the traffic is answered from the cache. */
const QUESTIONS = 400;

/** What a kind must be answered with (the deliberately failing ones included). */
const EXPECTED: Record<TrafficKind, readonly number[]> = {
  json: [200],
  stream: [200],
  cancelled: [200],
  // The upstream answers 500: the gateway keeps the upstream's status, reports 502 once its retries are spent, or
  // 503 while the target's breaker is open.
  'upstream-error': [500, 502, 503],
  'guardrail-block': [400],
};

export interface KindCounts {
  sent: number;
  asExpected: number;
  unexpected: number;
}

export interface TrafficReport {
  byKind: Record<TrafficKind, KindCounts>;
  /** Requests not sent because `maxInFlight` were still running (the gateway could not keep up). */
  shed: number;
  /** Requests running when the report was made. */
  inFlight: number;
  /** The first unexpected outcomes, described (status and body start, or the client's error). */
  unexpected: string[];
  unexpectedTotal: number;
}

export interface Traffic {
  /** Stops sending, waits for the requests in flight, closes the client's connections; resolves with the tally. */
  stop(): Promise<TrafficReport>;
  /** The tally so far. */
  snapshot(): TrafficReport;
}

export interface TrafficOptions {
  url: string;
  key: string;
  /** Requests per second offered. */
  rate: number;
  maxInFlight: number;
}

function questionFor(n: number): string {
  const q = n % QUESTIONS;
  // Every fifth question carries an e-mail address: the upstream echoes it and the output guardrail redacts it.
  const contact = q % 5 === 0 ? ` Reply to soak${q}@example.com.` : '';
  return `Soak question ${q}: explain topic ${q * 7919 % 1000} in two sentences.${contact}`;
}

function bodyFor(kind: TrafficKind, n: number): Record<string, unknown> {
  const question = questionFor(n);
  switch (kind) {
    case 'json':
      return { model: n % 2 === 0 ? 'soak-route' : 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }] };
    case 'stream':
      return { model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: question }] };
    case 'cancelled':
      // 40 ms between chunks: the client leaves after the first, while the upstream is still sending.
      return { model: 'openai/slow-chunks-40', stream: true, messages: [{ role: 'user', content: `${question} Cancel me ${n}.` }] };
    case 'upstream-error':
      return { model: 'openai/error-500', messages: [{ role: 'user', content: `fail ${n}` }] };
    case 'guardrail-block':
      return { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: `${question} ${BLOCKED_MARKER}` }] };
  }
}

function emptyCounts(): Record<TrafficKind, KindCounts> {
  const counts = {} as Record<TrafficKind, KindCounts>;
  for (const kind of new Set(CYCLE)) counts[kind] = { sent: 0, asExpected: 0, unexpected: 0 };
  return counts;
}

export function startTraffic(options: TrafficOptions): Traffic {
  // The soak's own pool, so stop() can close every client connection and the gateway's fd count can settle.
  const agent = new Agent({ keepAliveTimeout: 10_000, connections: options.maxInFlight });
  const byKind = emptyCounts();
  const unexpected: string[] = [];
  let unexpectedTotal = 0;
  let shed = 0;
  let inFlight = 0;
  let sequence = 0;
  const running = new Set<Promise<void>>();

  const note = (kind: TrafficKind, problem: string | null): void => {
    if (problem === null) {
      byKind[kind].asExpected++;
      return;
    }
    byKind[kind].unexpected++;
    unexpectedTotal++;
    if (unexpected.length < 20) unexpected.push(`${kind}: ${problem}`);
  };

  const send = async (kind: TrafficKind, n: number): Promise<void> => {
    const body = bodyFor(kind, n);
    const controller = new AbortController();
    try {
      const res = await fetch(`${options.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${options.key}` },
        body: JSON.stringify(body),
        dispatcher: agent,
        signal: controller.signal,
      });
      if (!EXPECTED[kind].includes(res.status)) {
        note(kind, `status ${res.status}: ${(await res.text()).slice(0, 200)}`);
        return;
      }
      if (kind === 'cancelled') {
        const reader = res.body?.getReader();
        const first = await reader?.read();
        controller.abort();
        note(kind, first && !first.done ? null : 'the stream ended before its first chunk');
        return;
      }
      const text = await res.text();
      if (kind === 'stream' && !text.includes('data: [DONE]')) note(kind, `stream without [DONE]: ${text.slice(-200)}`);
      else note(kind, null);
    } catch (err) {
      // The client's own abort of a cancelled stream is the point of that kind, not an error.
      if (kind === 'cancelled' && controller.signal.aborted) return note(kind, null);
      note(kind, `client error: ${(err as Error).message}${(err as Error).cause ? ` (${String((err as Error).cause)})` : ''}`);
    }
  };

  let credit = 0;
  let last = performance.now();
  const TICK_MS = 20;
  const timer = setInterval(() => {
    const now = performance.now();
    credit += ((now - last) / 1000) * options.rate;
    last = now;
    for (; credit >= 1; credit--) {
      if (inFlight >= options.maxInFlight) {
        shed++;
        continue;
      }
      const n = sequence++;
      const kind = CYCLE[n % CYCLE.length] as TrafficKind;
      byKind[kind].sent++;
      inFlight++;
      const request = send(kind, n).finally(() => {
        inFlight--;
        running.delete(request);
      });
      running.add(request);
    }
  }, TICK_MS);

  const snapshot = (): TrafficReport => ({
    byKind: structuredClone(byKind),
    shed,
    inFlight,
    unexpected: [...unexpected],
    unexpectedTotal,
  });
  return {
    snapshot,
    async stop() {
      clearInterval(timer);
      await Promise.all([...running]);
      // destroy, not close: a cancelled stream's socket may still be draining, and the fd count must settle.
      await agent.destroy();
      return snapshot();
    },
  };
}
