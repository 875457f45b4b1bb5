import { useMemo, useState } from 'preact/hooks';
import { api } from '../api/client.js';
import type { List, LogRecord, Route, RouteHealth, Usage } from '../api/types.js';
import { useApi } from '../api/use-api.js';
import { usageOverTime, usageTotals } from '../api/usage-series.js';
import { ErrorNotice } from '../components/error-notice.js';
import { Empty, Loading } from '../components/states.js';
import { TimeChart } from '../components/time-chart.js';
import { browserTimeZone, count, ms, percent, percentile, usd } from '../format.js';
import { ProviderHealth } from './provider-health.js';

const POLL_MS = 10_000;
/** Latency percentiles come from the newest records: enough to be stable, few enough to load at every poll. */
const LATENCY_SAMPLE = 500;

const RANGES = { '24h': { hours: 24, interval: 'hour' }, '7d': { hours: 24 * 7, interval: 'hour' }, '30d': { hours: 24 * 30, interval: 'day' } } as const;
type RangeName = keyof typeof RANGES;

export function OverviewPage() {
  const [rangeName, setRangeName] = useState<RangeName>('24h');
  const range = RANGES[rangeName];
  const usage = useApi(
    (signal) => {
      const to = new Date();
      const from = new Date(to.getTime() - range.hours * 3_600_000);
      return api.get<Usage>('/usage', { group_by: 'provider', interval: range.interval, from: from.toISOString(), to: to.toISOString(), tz: browserTimeZone() }, signal);
    },
    [rangeName],
    POLL_MS,
  );
  const recent = useApi((signal) => api.get<List<LogRecord>>('/logs', { limit: LATENCY_SAMPLE }, signal), [], POLL_MS);
  const health = useApi(
    async (signal) => {
      const routes = await api.get<List<Route>>('/routes', {}, signal);
      return Promise.all(routes.data.map((route) => api.get<RouteHealth>(`/routes/${encodeURIComponent(route.name)}/health`, {}, signal)));
    },
    [],
    POLL_MS,
  );

  const series = useMemo(() => (usage.data ? usageOverTime(usage.data) : null), [usage.data]);
  const totals = usage.data ? usageTotals(usage.data) : null;
  const latencies = (recent.data?.data ?? []).map((record) => record.duration_ms).filter((value): value is number => typeof value === 'number');
  const charts = useMemo(
    () =>
      series && {
        requests: [
          { label: 'requests', values: series.requests, color: '#2563eb' },
          { label: 'errors', values: series.errors, color: '#dc2626' },
        ],
        spend: [{ label: 'spend (USD)', values: series.spend_usd, color: '#059669' }],
        tokens: [
          { label: 'input tokens', values: series.input_tokens, color: '#7c3aed' },
          { label: 'output tokens', values: series.output_tokens, color: '#d97706' },
        ],
      },
    [series],
  );

  return (
    <section aria-labelledby="overview-title">
      <div class="page-head">
        <h1 id="overview-title">Overview</h1>
        <label>
          Range{' '}
          <select value={rangeName} onChange={(event) => setRangeName((event.target as HTMLSelectElement).value as RangeName)}>
            <option value="24h">last 24 hours</option>
            <option value="7d">last 7 days</option>
            <option value="30d">last 30 days</option>
          </select>
        </label>
      </div>
      <p class="muted">Refreshes every {POLL_MS / 1000} seconds.</p>
      <ErrorNotice error={usage.error ?? recent.error ?? health.error} />

      <dl class="tiles">
        <div>
          <dt>Requests</dt>
          <dd data-testid="total-requests">{totals ? count(totals.requests) : '…'}</dd>
        </div>
        <div>
          <dt>Errors</dt>
          <dd>{totals ? `${count(totals.errors)}${totals.requests ? ` (${percent(totals.errors / totals.requests)})` : ''}` : '…'}</dd>
        </div>
        <div>
          <dt>Spend</dt>
          <dd>{totals ? usd(totals.spend_usd) : '…'}</dd>
        </div>
        <div>
          <dt>Tokens in / out</dt>
          <dd>{totals ? `${count(totals.input_tokens)} / ${count(totals.output_tokens)}` : '…'}</dd>
        </div>
        <div>
          <dt>Latency p50 / p95</dt>
          <dd title={`Over the newest ${latencies.length} requests`}>
            {recent.data ? `${ms(percentile(latencies, 0.5))} / ${ms(percentile(latencies, 0.95))}` : '…'}
          </dd>
        </div>
      </dl>

      {series && charts ? (
        <div class="charts">
          <TimeChart title="Requests and errors" times={series.times} series={charts.requests} />
          <TimeChart title="Spend" times={series.times} series={charts.spend} format={usd} />
          <TimeChart title="Tokens" times={series.times} series={charts.tokens} />
        </div>
      ) : usage.loading ? (
        <Loading what="usage" />
      ) : null}

      <h2>Provider health</h2>
      {health.data ? (
        health.data.length ? (
          <ProviderHealth routes={health.data} />
        ) : (
          <Empty>No routes are configured, so there is no per-target health to show yet.</Empty>
        )
      ) : health.loading ? (
        <Loading what="provider health" />
      ) : null}
    </section>
  );
}
