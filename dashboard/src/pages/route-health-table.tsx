import { api } from '../api/client.js';
import { routePath, type RouteHealthView } from '../api/config-api.js';
import { useApi } from '../api/use-api.js';
import { ErrorNotice } from '../components/error-notice.js';
import { Loading } from '../components/states.js';
import { ms, percent } from '../format.js';

export const HEALTH_POLL_MS = 3000;

/**
 * A route's candidates as routing sees them right now (`GET /api/routes/:name/health`, polled): each target per
 * provider key, its configured and effective (adaptive) weight, its share of new traffic, breaker and health;
 * then the fallback chain's groups, and what is skipped because it cannot be served.
 */
export function RouteHealthTable({ name, version }: { name: string; version: string }) {
  // `version` (the route's config as JSON) reloads at once after an edit instead of at the next poll.
  const health = useApi((signal) => api.get<RouteHealthView>(`${routePath(name)}/health`, {}, signal), [name, version], HEALTH_POLL_MS);
  if (health.error) return <ErrorNotice error={health.error} />;
  if (!health.data) return health.loading ? <Loading what="live health" /> : null;
  const rows = health.data.groups.flatMap((group) => group.targets.map((target) => ({ group, target })));
  return (
    <>
      <div class="table-wrap">
        <table data-testid={`health-${name}`}>
          <caption class="visually-hidden">Live weights and health of the route {name}</caption>
          <thead>
            <tr>
              <th scope="col">Group</th>
              <th scope="col">Target</th>
              <th scope="col">Key</th>
              <th scope="col">Weight</th>
              <th scope="col">Effective</th>
              <th scope="col">Share</th>
              <th scope="col">Breaker</th>
              <th scope="col">Success</th>
              <th scope="col">Latency</th>
              <th scope="col">Calls</th>
              <th scope="col">Last error</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(({ group, target }) => (
              <tr key={`${group.name}|${target.target}|${target.key_id ?? ''}`} data-target={`${target.provider}/${target.model}`} data-role={group.role}>
                <td>
                  {group.role === 'primary' ? 'primary' : <span class="muted">fallback: {group.name}</span>}
                </td>
                <th scope="row">
                  {target.provider}/{target.model}
                </th>
                <td>{target.key_id ? <code>{target.key_id}</code> : <span class="muted">—</span>}</td>
                <td data-col="configured">{target.configured_weight}</td>
                <td data-col="effective">{Math.round(target.effective_weight * 100) / 100}</td>
                <td data-col="share">{percent(target.share)}</td>
                <td>
                  <span class={`badge breaker-${target.breaker.state}`}>{target.breaker.state.replace('_', ' ')}</span>
                </td>
                <td>{target.health.calls ? percent(target.health.success_rate) : '—'}</td>
                <td>{ms(target.health.latency_ms)}</td>
                <td data-col="calls">{target.health.calls}</td>
                <td>{target.health.last_error ?? <span class="muted">—</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {health.data.unavailable?.length ? (
        <div class="notice notice-error">
          <strong>Skipped, cannot be served:</strong>
          <ul>
            {health.data.unavailable.map((item) => (
              <li key={`${item.role}|${item.target}`}>
                {item.target} ({item.role}{item.via !== name ? ` via ${item.via}` : ''}): {item.reason}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </>
  );
}
