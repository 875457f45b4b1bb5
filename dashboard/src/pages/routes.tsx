import { RoutingRulesSection } from './routing-rules.js';
import { useState } from 'preact/hooks';
import { api, type ApiError } from '../api/client.js';
import { asApiError, routePath, type RouteView } from '../api/config-api.js';
import type { List } from '../api/types.js';
import { useApi } from '../api/use-api.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { ErrorNotice } from '../components/error-notice.js';
import { SourceBadge } from '../components/source-badge.js';
import { Empty, Loading } from '../components/states.js';
import { RouteForm } from './route-form.js';
import { HEALTH_POLL_MS, RouteHealthTable } from './route-health-table.js';
import './config-pages.css';

type Editing = { kind: 'new' } | { kind: 'edit'; route: RouteView } | null;

/** Routes: weighted targets and fallback chains, with each route's live weights and health, polled. */
export function RoutesPage() {
  const routes = useApi((signal) => api.get<List<RouteView>>('/routes', {}, signal), []);
  const [editing, setEditing] = useState<Editing>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [actionError, setActionError] = useState<ApiError | null>(null);
  const list = routes.data?.data ?? [];

  const remove = async (route: RouteView): Promise<void> => {
    setActionError(null);
    setNotice(null);
    try {
      const remaining = await api.delete<RouteView | undefined>(routePath(route.name));
      setNotice(remaining ? `The API's version of ${route.name} is deleted; the config file's route applies again.` : `Route ${route.name} deleted.`);
    } catch (err) {
      setActionError(asApiError(err));
    }
    routes.reload();
  };

  const form = editing ? (
    <RouteForm
      key={editing.kind === 'edit' ? `edit:${editing.route.name}` : 'new'}
      route={editing.kind === 'edit' ? editing.route : null}
      existing={list.map((route) => route.name)}
      onCancel={() => setEditing(null)}
      onSaved={(name) => {
        setEditing(null);
        setNotice(`Route ${name} saved: the next request follows it.`);
        routes.reload();
      }}
    />
  ) : null;

  return (
    <section aria-labelledby="routes-title">
      <div class="page-head">
        <h1 id="routes-title">Routes</h1>
        <button type="button" onClick={() => setEditing({ kind: 'new' })} disabled={editing?.kind === 'new'}>
          Create a route
        </button>
      </div>
      <p class="muted">
        Clients send a route's name as the model. Weights and health refresh every {HEALTH_POLL_MS / 1000} s; changes apply to the next request,
        without a restart.
      </p>
      <ErrorNotice error={routes.error ?? actionError} />
      {notice ? (
        <div class="notice notice-success" role="status">
          {notice}
        </div>
      ) : null}
      {editing?.kind === 'new' ? form : null}
      {routes.data ? (
        list.length ? (
          list.map((route) => (
            <article class="panel route-card" key={route.name} aria-labelledby={`route-${route.name}`} data-route={route.name}>
              <div class="page-head">
                <h2 id={`route-${route.name}`}>
                  {route.name} <SourceBadge source={route.source} />
                </h2>
                <div class="actions">
                  <button type="button" onClick={() => setEditing({ kind: 'edit', route })}>
                    Edit<span class="visually-hidden"> route {route.name}</span>
                  </button>
                  <ConfirmButton label="Delete" title={`Delete the route “${route.name}”?`} confirmLabel="Delete route" onConfirm={() => void remove(route)}>
                    <p>Clients sending {route.name} as the model get an error from then on (or the config file's route, if it has one).</p>
                  </ConfirmButton>
                </div>
              </div>
              {editing?.kind === 'edit' && editing.route.name === route.name ? form : <RouteSummary route={route} />}
              <h3>Live weights and health</h3>
              <RouteHealthTable name={route.name} version={JSON.stringify(route)} />
            </article>
          ))
        ) : (
          <Empty>No routes yet. Create one to spread a model name over several providers, with a fallback chain.</Empty>
        )
      ) : routes.loading ? (
        <Loading what="routes" />
      ) : null}
      <RoutingRulesSection />
    </section>
  );
}

function RouteSummary({ route }: { route: RouteView }) {
  const total = route.targets.reduce((sum, target) => sum + target.weight, 0);
  return (
    <dl class="fields">
      <dt>Targets</dt>
      <dd>
        {route.targets.map((target, index) => (
          <span key={`${target.model}|${index}`}>
            {index ? ', ' : ''}
            <code>{target.model}</code> × {target.weight}
            {route.targets.length > 1 && total > 0 ? <span class="muted"> ({Math.round((target.weight / total) * 100)}%)</span> : null}
          </span>
        ))}
      </dd>
      <dt>Fallbacks</dt>
      <dd>
        {route.fallbacks.length ? (
          route.fallbacks.map((fallback, index) => (
            <span key={`${fallback}|${index}`}>
              {index ? ' → ' : ''}
              <code>{fallback}</code>
            </span>
          ))
        ) : (
          <span class="muted">none</span>
        )}
      </dd>
      <dt>Adaptive</dt>
      <dd>{route.adaptive === undefined ? 'as settings' : route.adaptive ? 'on' : 'off'}</dd>
    </dl>
  );
}
