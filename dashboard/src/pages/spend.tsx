import { useMemo } from 'preact/hooks';
import { api } from '../api/client.js';
import type { List, Team, Usage, UsageGroupBy, VirtualKey } from '../api/types.js';
import { useApi } from '../api/use-api.js';
import { usageBuckets } from '../api/usage-series.js';
import { ErrorNotice, fieldError } from '../components/error-notice.js';
import { Empty, Loading } from '../components/states.js';
import { TimeChart } from '../components/time-chart.js';
import { toCsv } from '../csv.js';
import { download } from '../download.js';
import { browserTimeZone, count, dateInput, usd } from '../format.js';
import { navigate, type Location } from '../router.js';

const GROUPS: UsageGroupBy[] = ['key', 'model', 'team', 'provider', 'route'];
const COLORS = ['#2563eb', '#059669', '#d97706', '#7c3aed', '#dc2626', '#0891b2'];
/** The chart draws the biggest spenders; the table and the CSV have every group the answer holds, and the rest summed. */
const CHART_GROUPS = 5;
/** Keys named in one `GET /api/keys?ids=` (the API takes up to 500). */
const KEY_IDS_PER_REQUEST = 500;

/** Dates in the URL are the browser's local days (`YYYY-MM-DD`, as the date inputs give them). */
function rangeOf(query: URLSearchParams): { from: string; to: string } {
  const today = new Date();
  const monthAgo = new Date(today.getFullYear(), today.getMonth(), today.getDate() - 29);
  return { from: query.get('from') ?? dateInput(monthAgo), to: query.get('to') ?? dateInput(today) };
}

/** The day after a `YYYY-MM-DD` date (the range's exclusive end), or the text as it is when it is not one (the API then names it). */
function dayAfter(date: string): string {
  const parts = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!parts) return date;
  return dateInput(new Date(Number(parts[1]), Number(parts[2]) - 1, Number(parts[3]) + 1));
}

export function SpendPage({ location }: { location: Location }) {
  const groupBy = (GROUPS as string[]).includes(location.query.get('group_by') ?? '') ? (location.query.get('group_by') as UsageGroupBy) : 'key';
  const interval = location.query.get('interval') === 'hour' ? 'hour' : 'day';
  const range = rangeOf(location.query);
  const usage = useApi(
    // The API reads the dates as the start of those days in the browser's zone, and counts its local days.
    (signal) => api.get<Usage>('/usage', { group_by: groupBy, interval, from: range.from, to: dayAfter(range.to), tz: browserTimeZone() }, signal),
    [groupBy, interval, range.from, range.to],
  );
  // Keys and teams are shown by name; the usage rows carry their ids. Only the keys the answer holds are asked for
  // (up to 1,000 groups, a few requests of KEY_IDS_PER_REQUEST): every key of a large gateway was an 11 MB answer.
  const keyGroups = groupBy === 'key' ? (usage.data?.totals.map((total) => total.group) ?? []) : [];
  const names = useApi(
    async (signal) => {
      if (groupBy === 'team') return new Map((await api.get<List<Team>>('/teams', {}, signal)).data.map((team) => [team.id, team.name]));
      const batches: string[][] = [];
      for (let at = 0; at < keyGroups.length; at += KEY_IDS_PER_REQUEST) batches.push(keyGroups.slice(at, at + KEY_IDS_PER_REQUEST));
      const lists = await Promise.all(batches.map((ids) => api.get<List<Pick<VirtualKey, 'id' | 'name'>>>('/keys', { ids: ids.join(','), fields: 'name' }, signal)));
      return new Map(lists.flatMap((list) => list.data.map((key): [string, string] => [key.id, key.name])));
    },
    [groupBy, keyGroups.join(',')],
  );
  const nameOf = (group: string): string => {
    const name = names.data?.get(group);
    return name ? `${name} (${group})` : group;
  };

  const totals = useMemo(() => [...(usage.data?.totals ?? [])].sort((a, b) => b.spend_usd - a.spend_usd), [usage.data]);
  const chart = useMemo(() => {
    if (!usage.data || totals.length === 0) return null;
    const { times, indexOf } = usageBuckets(usage.data);
    const series = totals.slice(0, CHART_GROUPS).map((total, index) => {
      const values: number[] = times.map(() => 0);
      for (const row of usage.data!.data) {
        const at = indexOf(row.start);
        if (row.group === total.group && at !== undefined) values[at]! += row.spend_usd;
      }
      return { label: names.data?.get(total.group) ?? total.group, values, color: COLORS[index % COLORS.length]! };
    });
    return { times, series };
  }, [usage.data, totals, names.data]);

  const change = (event: Event): void => {
    const form = new FormData((event.target as HTMLElement).closest('form')!);
    navigate('/spend', { group_by: String(form.get('group_by')), interval: String(form.get('interval')), from: String(form.get('from')), to: String(form.get('to')) });
  };
  const csv = (): void => {
    if (!usage.data) return;
    const rows = usage.data.data.map((row) => [row.start, row.group, groupBy === 'key' || groupBy === 'team' ? (names.data?.get(row.group) ?? '') : '', row.requests, row.errors, row.spend_usd, row.input_tokens, row.output_tokens]);
    // The groups past the answer's top ones, summed per interval: no group of their own, named by how many they are.
    const others = usage.data.others;
    if (others) rows.push(...others.data.map((row) => [row.start, '', `${others.groups} more, summed`, row.requests, row.errors, row.spend_usd, row.input_tokens, row.output_tokens]));
    download(`tollgate-spend-by-${groupBy}-${range.from}-to-${range.to}.csv`, toCsv(['start', groupBy, 'name', 'requests', 'errors', 'spend_usd', 'input_tokens', 'output_tokens'], rows));
  };

  return (
    <section aria-labelledby="spend-title">
      <h1 id="spend-title">Spend</h1>
      <form class="filters" onChange={change} onSubmit={(event) => event.preventDefault()}>
        <label>
          Group by
          <select name="group_by" value={groupBy}>
            {GROUPS.map((group) => (
              <option key={group} value={group}>
                {group}
              </option>
            ))}
          </select>
        </label>
        <label>
          Per
          <select name="interval" value={interval}>
            <option value="day">day</option>
            <option value="hour">hour</option>
          </select>
        </label>
        <label>
          From
          <input type="date" name="from" value={range.from} />
          {fieldError(usage.error, 'from') ? <span class="field-error">{fieldError(usage.error, 'from')}</span> : null}
        </label>
        <label>
          To
          <input type="date" name="to" value={range.to} />
          {fieldError(usage.error, 'to') ? <span class="field-error">{fieldError(usage.error, 'to')}</span> : null}
        </label>
        <div class="actions">
          <button type="button" onClick={csv} disabled={!usage.data || usage.data.data.length === 0}>
            Download CSV
          </button>
        </div>
      </form>
      {usage.error && !fieldError(usage.error, 'from') && !fieldError(usage.error, 'to') ? <ErrorNotice error={usage.error} /> : null}
      {chart ? <TimeChart title={`Spend per ${interval}, top ${chart.series.length} by ${groupBy}`} times={chart.times} series={chart.series} format={usd} /> : null}
      {usage.data ? (
        totals.length ? (
          <div class="table-wrap">
            <table>
              <caption class="visually-hidden">Totals per {groupBy}, biggest spend first</caption>
              <thead>
                <tr>
                  <th scope="col">{groupBy}</th>
                  <th scope="col">Spend</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Errors</th>
                  <th scope="col">Tokens in / out</th>
                </tr>
              </thead>
              <tbody>
                {totals.map((total) => (
                  <tr key={total.group}>
                    <th scope="row">{nameOf(total.group)}</th>
                    <td>{usd(total.spend_usd)}</td>
                    <td>{count(total.requests)}</td>
                    <td>{count(total.errors)}</td>
                    <td>
                      {count(total.input_tokens)} / {count(total.output_tokens)}
                    </td>
                  </tr>
                ))}
                {usage.data.others ? (
                  <tr>
                    <th scope="row">
                      {count(usage.data.others.groups)} more, summed (the answer holds the top {count(totals.length)} by spend)
                    </th>
                    <td>{usd(usage.data.others.totals.spend_usd)}</td>
                    <td>{count(usage.data.others.totals.requests)}</td>
                    <td>{count(usage.data.others.totals.errors)}</td>
                    <td>
                      {count(usage.data.others.totals.input_tokens)} / {count(usage.data.others.totals.output_tokens)}
                    </td>
                  </tr>
                ) : null}
              </tbody>
            </table>
          </div>
        ) : (
          <Empty>No usage in this range.</Empty>
        )
      ) : usage.loading ? (
        <Loading what="usage" />
      ) : null}
    </section>
  );
}
