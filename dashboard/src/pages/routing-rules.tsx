import { api } from '../api/client.js';
import { useApi } from '../api/use-api.js';
import { ErrorNotice } from '../components/error-notice.js';
import { Empty, Loading } from '../components/states.js';

interface RoutingRule {
  name?: string;
  when?: Record<string, unknown>;
  route_to: string;
}

/** One condition as the operator wrote it: `model = openai/*`, `estimated_tokens_gte = 8000`. */
function condition(name: string, value: unknown): string {
  const shown = Array.isArray(value) ? value.join(', ') : typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
  return `${name} = ${shown}`;
}

/**
 * Usage-based routing rules in effect (the config's `routing_rules`): the first rule whose conditions all hold sends
 * the request to its `route_to`. They are edited as part of the config, on the settings page, where the whole
 * list is checked before it is saved (their order is their meaning).
 */
export function RoutingRulesSection() {
  const config = useApi((signal) => api.get<{ routing_rules: RoutingRule[] }>('/config', {}, signal), []);
  const rules = config.data?.routing_rules ?? [];
  return (
    <section class="panel" aria-labelledby="routing-rules-title" data-testid="routing-rules">
      <h2 id="routing-rules-title">Usage-based routing rules</h2>
      <p class="muted">
        Checked in order before the route: the first rule whose conditions all hold sends the request elsewhere. Edit them on the{' '}
        <a href="#/settings">settings page</a> (<code>routing_rules</code>).
      </p>
      <ErrorNotice error={config.error} />
      {config.data ? (
        rules.length ? (
          <div class="table-wrap">
            <table>
              <caption class="visually-hidden">Routing rules, in order</caption>
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Rule</th>
                  <th scope="col">When</th>
                  <th scope="col">Goes to</th>
                </tr>
              </thead>
              <tbody>
                {rules.map((rule, index) => (
                  <tr key={index}>
                    <td>{index + 1}</td>
                    <th scope="row">{rule.name ?? <span class="muted">unnamed</span>}</th>
                    <td>
                      {Object.entries(rule.when ?? {}).length ? (
                        Object.entries(rule.when ?? {}).map(([name, value]) => (
                          <div key={name}>
                            <code>{condition(name, value)}</code>
                          </div>
                        ))
                      ) : (
                        <span class="muted">always</span>
                      )}
                    </td>
                    <td>
                      <code>{rule.route_to}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <Empty>No routing rules: every request goes to the route or model it names.</Empty>
        )
      ) : config.loading ? (
        <Loading what="routing rules" />
      ) : null}
    </section>
  );
}
