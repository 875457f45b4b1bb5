import { api } from '../api/client.js';
import type { List, LogRecord } from '../api/types.js';
import { useApi } from '../api/use-api.js';
import { ErrorNotice, fieldError } from '../components/error-notice.js';
import { Empty, Loading } from '../components/states.js';
import { count, dateTime, dateTimeInput, isoWithOffset, ms, usd } from '../format.js';
import { href, navigate, type Location } from '../router.js';

const PAGE_SIZE = 50;
/**
 * Calls one view makes at most while the API answers empty pages with a cursor: a page looks at a bounded number of
 * records and of their logged bodies, so a filter that matches rarely may come back empty though older records
 * match. Followed, the match further back shows instead of "no requests match".
 */
const MAX_CALLS = 25;

/** The filters of GET /api/logs the page offers; they live in the URL (`#/logs?status=5xx`), so views are links. */
const FILTERS = [
  { name: 'from', label: 'From (local time)', placeholder: '' },
  { name: 'to', label: 'To (local time)', placeholder: '' },
  { name: 'status', label: 'Status', placeholder: '429 or 5xx' },
  { name: 'model', label: 'Model', placeholder: 'openai/gpt-4o-mini' },
  { name: 'provider', label: 'Provider', placeholder: 'openai' },
  { name: 'route', label: 'Route', placeholder: '' },
  { name: 'key_id', label: 'Key id', placeholder: 'vk_…' },
  { name: 'team_id', label: 'Team id', placeholder: 'team_…' },
  { name: 'q', label: 'Error text', placeholder: '' },
] as const;

/** The time filters: local date-time inputs in the page, ISO times with the browser's offset in the URL and the API call. */
const TIME_FILTERS = new Set<string>(['from', 'to']);

/** A `datetime-local` value (the browser's local time) as an ISO time with its offset; the text as it is when it is not one. */
function timeForApi(local: string): string {
  const date = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(local) ? new Date(local) : new Date(Number.NaN);
  return Number.isNaN(date.getTime()) ? local : isoWithOffset(date);
}

/** What a time filter's input shows for the URL's value (an ISO time or epoch ms): the browser's local time, or nothing. */
function timeForInput(value: string | undefined): string {
  if (!value) return '';
  const date = new Date(/^\d+$/.test(value) ? Number(value) : Date.parse(value));
  return Number.isNaN(date.getTime()) ? '' : dateTimeInput(date);
}

function filtersOf(query: URLSearchParams): Record<string, string | undefined> {
  const filters: Record<string, string | undefined> = {};
  for (const filter of FILTERS) filters[filter.name] = query.get(filter.name) ?? undefined;
  return filters;
}

export function LogsPage({ location }: { location: Location }) {
  const filters = filtersOf(location.query);
  const before = location.query.get('before') ?? undefined;
  // Cursors of the pages already seen, so "Newer" can go back (the API pages one way: older).
  const trail = (location.query.get('trail') ?? '').split(',').filter(Boolean);
  const key = JSON.stringify([filters, before]);
  const logs = useApi(async (signal) => {
    let page = await api.get<List<LogRecord>>('/logs', { ...filters, before, limit: PAGE_SIZE }, signal);
    for (let calls = 1; page.data.length === 0 && page.next_before && calls < MAX_CALLS; calls++) {
      page = await api.get<List<LogRecord>>('/logs', { ...filters, before: page.next_before, limit: PAGE_SIZE }, signal);
    }
    return page;
  }, [key]);

  const apply = (event: Event): void => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const next: Record<string, string | undefined> = {};
    for (const filter of FILTERS) {
      const value = String(form.get(filter.name) ?? '').trim();
      next[filter.name] = value === '' ? undefined : TIME_FILTERS.has(filter.name) ? timeForApi(value) : value;
    }
    navigate('/logs', next);
  };
  const older = (cursor: string): void => navigate('/logs', { ...filters, before: cursor, trail: [...trail, before ?? ''].join(',') || ',' });
  const newer = (): void => {
    const previous = trail.slice(0, -1);
    navigate('/logs', { ...filters, before: trail[trail.length - 1] || undefined, trail: previous.join(',') || undefined });
  };

  return (
    <section aria-labelledby="logs-title">
      <h1 id="logs-title">Request logs</h1>
      <form class="filters" onSubmit={apply} key={JSON.stringify(filters)}>
        {FILTERS.map((filter) => {
          const problem = fieldError(logs.error, filter.name);
          return (
            <label key={filter.name}>
              {filter.label}
              {TIME_FILTERS.has(filter.name) ? (
                <input type="datetime-local" step={1} name={filter.name} defaultValue={timeForInput(filters[filter.name])} aria-invalid={problem ? true : undefined} aria-describedby={problem ? `err-${filter.name}` : undefined} />
              ) : (
                <input name={filter.name} defaultValue={filters[filter.name] ?? ''} placeholder={filter.placeholder} aria-invalid={problem ? true : undefined} aria-describedby={problem ? `err-${filter.name}` : undefined} />
              )}
              {problem ? (
                <span class="field-error" id={`err-${filter.name}`}>
                  {problem}
                </span>
              ) : null}
            </label>
          );
        })}
        <div class="actions">
          <button type="submit">Apply filters</button>
          <a href={href('/logs')}>Clear</a>
        </div>
      </form>
      {/* A refusal about a filter shows under it; any other (a bad `before` cursor in a link, say) shows here, or nothing would. */}
      {logs.error && !FILTERS.some((filter) => fieldError(logs.error, filter.name)) ? <ErrorNotice error={logs.error} /> : null}
      {logs.data ? (
        logs.data.data.length ? (
          <LogTable records={logs.data.data} />
        ) : logs.data.next_before ? (
          <Empty>None of the records looked at so far match these filters: Older → looks further back.</Empty>
        ) : (
          <Empty>No requests match{Object.values(filters).some(Boolean) ? ' these filters' : ' yet: send one to /v1 and it shows here'}.</Empty>
        )
      ) : logs.loading ? (
        <Loading what="requests" />
      ) : null}
      <div class="pager">
        <button type="button" disabled={!before} onClick={newer}>
          ← Newer
        </button>
        <button type="button" disabled={!logs.data?.next_before} onClick={() => logs.data?.next_before && older(logs.data.next_before)}>
          Older →
        </button>
      </div>
    </section>
  );
}

function LogTable({ records }: { records: LogRecord[] }) {
  return (
    <div class="table-wrap">
      <table>
        <caption class="visually-hidden">Requests, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Status</th>
            <th scope="col">Model</th>
            <th scope="col">Provider</th>
            <th scope="col">Key</th>
            <th scope="col">Duration</th>
            <th scope="col">Tokens in / out</th>
            <th scope="col">Cost</th>
          </tr>
        </thead>
        <tbody>
          {records.map((record) => (
            <tr key={record.id}>
              <td>
                <a href={href(`/logs/${encodeURIComponent(record.id)}`)}>{dateTime(record.at)}</a>
              </td>
              <td>
                <span class={`badge status-${String(record.status)[0]}xx`}>{record.status}</span>
              </td>
              <td>{record.model ?? '—'}</td>
              <td>{record.provider ?? '—'}</td>
              <td>{record.key_id ?? <span class="muted">none</span>}</td>
              <td>{ms(record.duration_ms)}</td>
              <td>
                {count(record.prompt_tokens)} / {count(record.completion_tokens)}
              </td>
              <td>{usd(record.cost_usd)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
