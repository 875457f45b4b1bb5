import { stringify } from 'yaml';
import { api, apiUrl } from '../api/client.js';
import type { AuditEntry } from '../api/settings-api.js';
import type { List } from '../api/types.js';
import { useApi } from '../api/use-api.js';
import { ErrorNotice } from '../components/error-notice.js';
import { Empty, Loading } from '../components/states.js';
import { dateTime } from '../format.js';
import { navigate, type Location } from '../router.js';
import './settings.css';

const PAGE_SIZE = 25;
/** More changed fields than this read better in the before/after panes. */
const MAX_PATHS = 8;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The fields that differ between two snapshots (`settings.log_retention_days`, `targets.0.weight`), as paths. */
export function changedPaths(before: unknown, after: unknown, prefix = '', out: string[] = []): string[] {
  if (out.length > MAX_PATHS) return out;
  // A section one side lacks reads as empty, so its fields are named rather than the whole section.
  const left = before === undefined && isObject(after) && !Array.isArray(after) ? {} : before;
  const right = after === undefined && isObject(before) && !Array.isArray(before) ? {} : after;
  if (isObject(left) && isObject(right) && Array.isArray(left) === Array.isArray(right)) {
    const keys = new Set([...Object.keys(left), ...Object.keys(right)]);
    for (const key of keys) changedPaths((left as Record<string, unknown>)[key], (right as Record<string, unknown>)[key], prefix ? `${prefix}.${key}` : key, out);
    return out;
  }
  if (JSON.stringify(before) !== JSON.stringify(after)) out.push(prefix || '(whole item)');
  return out;
}

function snapshot(value: unknown): string {
  if (value === null || value === undefined) return '(none)';
  return stringify(value, { lineWidth: 0 }).trimEnd();
}

/** The audit log of config changes, newest first, paged by the API's cursor; who, when, what, before and after. */
export function AuditPage({ location }: { location: Location }) {
  const before = location.query.get('before') ?? undefined;
  // Cursors of the pages already seen, so "Newer" can go back (the API pages one way: older).
  const trail = (location.query.get('trail') ?? '').split(',').filter(Boolean);
  const entries = useApi((signal) => api.get<List<AuditEntry>>('/audit', { before, limit: PAGE_SIZE }, signal), [before]);

  const older = (cursor: string): void => navigate('/audit', { before: cursor, trail: [...trail, before ?? ''].join(',') || ',' });
  const newer = (): void => {
    const previous = trail.slice(0, -1);
    navigate('/audit', { before: trail[trail.length - 1] || undefined, trail: previous.join(',') || undefined });
  };

  return (
    <section aria-labelledby="audit-title">
      <div class="page-head">
        <h1 id="audit-title">Audit log</h1>
        <p class="actions">
          Export every entry:
          <a href={apiUrl('/audit/export', { format: 'jsonl' })} download>
            JSON lines
          </a>
          <a href={apiUrl('/audit/export', { format: 'csv' })} download>
            CSV
          </a>
        </p>
      </div>
      <p class="muted">
        Every change to the configuration, through the API, this dashboard or the config file: who made it, when, what it touched, and the item before
        and after (secrets masked).
      </p>
      <ErrorNotice error={entries.error} />
      {entries.data ? (
        entries.data.data.length ? (
          <div class="table-wrap audit-table">
            <table>
              <caption class="visually-hidden">Configuration changes, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Who</th>
                  <th scope="col">Action</th>
                  <th scope="col">Target</th>
                  <th scope="col">Version</th>
                  <th scope="col">Change</th>
                </tr>
              </thead>
              <tbody>
                {entries.data.data.map((entry) => (
                  <AuditRow key={entry.id} entry={entry} />
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <Empty>{before ? 'No older changes.' : 'No configuration changes yet: changes made through the API, this dashboard or the config file show here.'}</Empty>
        )
      ) : entries.loading ? (
        <Loading what="the audit log" />
      ) : null}
      <div class="pager">
        <button type="button" disabled={!before} onClick={newer}>
          ← Newer
        </button>
        <button type="button" disabled={!entries.data?.next_before} onClick={() => entries.data?.next_before && older(entries.data.next_before)}>
          Older →
        </button>
      </div>
    </section>
  );
}

function AuditRow({ entry }: { entry: AuditEntry }) {
  // A created or deleted item is said to be so; a change names the fields it touched.
  const paths = entry.before === null || entry.after === null ? [] : changedPaths(entry.before, entry.after);
  const summary =
    entry.before === null ? 'created' : entry.after === null ? 'deleted' : paths.length === 0 ? 'no field changed' : paths.length > MAX_PATHS ? `${MAX_PATHS}+ fields changed` : `${paths.length} field${paths.length === 1 ? '' : 's'} changed`;
  return (
    <tr data-audit-id={entry.id}>
      <td>
        <time dateTime={entry.at}>{dateTime(entry.at)}</time>
      </td>
      <td>
        <code>
          {entry.actor.kind}:{entry.actor.id}
        </code>
      </td>
      <td>{entry.action}</td>
      <th scope="row">
        <code>{entry.target}</code>
      </th>
      <td>{entry.version}</td>
      <td class="audit-change">
        <details>
          <summary>
            {summary}
            <span class="visually-hidden"> in {entry.target}: before and after</span>
          </summary>
          {paths.length > 0 && paths.length <= MAX_PATHS ? (
            <ul class="changed-paths" aria-label="Changed fields">
              {paths.map((path) => (
                <li key={path}>
                  <code>{path}</code>
                </li>
              ))}
            </ul>
          ) : null}
          <div class="change-panes">
            <div>
              <strong>Before</strong>
              <pre>{snapshot(entry.before)}</pre>
            </div>
            <div>
              <strong>After</strong>
              <pre>{snapshot(entry.after)}</pre>
            </div>
          </div>
        </details>
      </td>
    </tr>
  );
}
