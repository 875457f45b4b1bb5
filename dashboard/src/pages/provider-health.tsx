import type { RouteHealth } from '../api/types.js';
import { ms, percent } from '../format.js';

/** Each route's targets: breaker state, success rate, latency and the effective (adaptive) weight. */
export function ProviderHealth({ routes }: { routes: RouteHealth[] }) {
  return (
    <div class="table-wrap">
      <table>
        <caption class="visually-hidden">Targets of each route with their breaker and health</caption>
        <thead>
          <tr>
            <th scope="col">Route</th>
            <th scope="col">Target</th>
            <th scope="col">Breaker</th>
            <th scope="col">Success</th>
            <th scope="col">Latency</th>
            <th scope="col">Weight (effective)</th>
            <th scope="col">Calls</th>
          </tr>
        </thead>
        <tbody>
          {routes.flatMap((route) =>
            route.groups.flatMap((group) =>
              group.targets.map((target) => (
                <tr key={`${route.name}|${group.name}|${target.target}|${target.key_id ?? ''}`}>
                  <td>
                    {route.name}
                    {group.role !== 'primary' ? <span class="muted"> ({group.role})</span> : null}
                  </td>
                  <td>{target.target}</td>
                  <td>
                    <span class={`badge breaker-${target.breaker.state}`}>{target.breaker.state.replace('_', ' ')}</span>
                  </td>
                  <td>{target.health.calls ? percent(target.health.success_rate) : '—'}</td>
                  <td>{ms(target.health.latency_ms)}</td>
                  <td>
                    {target.configured_weight} ({Math.round(target.effective_weight * 100) / 100})
                  </td>
                  <td>{target.health.calls}</td>
                </tr>
              )),
            ),
          )}
        </tbody>
      </table>
    </div>
  );
}
