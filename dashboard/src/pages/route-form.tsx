import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api/client.js';
import { apiPut, asApiError, routePath, type RouteView } from '../api/config-api.js';
import { ErrorNotice, fieldError } from '../components/error-notice.js';
import { FormField } from '../components/form-field.js';
import { scopedError } from '../components/scoped-error.js';

interface TargetRow {
  /** Stable across removals, so Preact keeps each row's inputs with it. */
  key: number;
  model: string;
  weight: string;
}

let nextRow = 0;
const row = (model = '', weight = '1'): TargetRow => ({ key: nextRow++, model, weight });

/**
 * Create a route or replace one: weighted targets (`<provider>/<model>`) and the fallback chain, in order. An
 * edit sends back everything else the route had (retry, breaker, plugins, cache) unchanged.
 */
export function RouteForm({ route, existing, onSaved, onCancel }: { route: RouteView | null; existing: string[]; onSaved(name: string): void; onCancel(): void }) {
  const [targets, setTargets] = useState<TargetRow[]>(() => (route ? route.targets.map((t) => row(t.model, String(t.weight))) : [row(), row()]));
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const scope = route ? 'edit-route' : 'new-route';
  const heading = useRef<HTMLHeadingElement>(null);
  // Opened by a button elsewhere on the page: move focus into the form once, so the keyboard continues there.
  useEffect(() => heading.current?.focus(), []);

  const update = (key: number, change: Partial<TargetRow>): void => setTargets((rows) => rows.map((r) => (r.key === key ? { ...r, ...change } : r)));

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const name = route ? route.name : String(form.get('name') ?? '').trim();
    if (!name) return setError(new ApiError(400, 'Name the route: clients send it as the model.', 'name'));
    if (!route && existing.includes(name)) return setError(new ApiError(409, `A route named '${name}' exists: edit it instead.`, 'name'));
    const fallbacks = String(form.get('fallbacks') ?? '').split(',').map((item) => item.trim()).filter(Boolean);
    const { name: _name, source: _source, ...rest } = route ?? ({} as Partial<RouteView>);
    const body = {
      ...rest,
      targets: targets.map((t) => ({ model: t.model.trim(), weight: t.weight.trim() === '' ? undefined : Number(t.weight) })),
      fallbacks,
      adaptive: form.get('adaptive') === '' ? undefined : form.get('adaptive') === 'true',
    };
    setBusy(true);
    setError(null);
    try {
      await apiPut(routePath(name), body);
      onSaved(name);
    } catch (err) {
      setError(scopedError(asApiError(err), `routes.${name}`));
    } finally {
      setBusy(false);
    }
  };

  const known = ['name', 'targets', 'fallbacks', 'adaptive'];
  const general = error && (!error.param || !known.some((field) => error.param === field || error.param?.startsWith(`${field}.`)));
  const targetsProblem = fieldError(error, 'targets') && error?.param === 'targets' ? error.message : null;
  const title = route ? `Edit route ${route.name}` : 'Create a route';
  return (
    <form class="panel route-form" noValidate onSubmit={(event) => void submit(event)} aria-labelledby={`${scope}-title`} onKeyDown={(event) => event.key === 'Escape' && onCancel()}>
      <h2 id={`${scope}-title`} tabIndex={-1} ref={heading}>
        {title}
      </h2>
      {general ? <ErrorNotice error={error} /> : null}
      {route ? null : (
        <FormField name="name" label="Route name" scope={scope} error={error} hint="what clients send as the model, e.g. chat-default">
          {(aria) => <input {...aria} name="name" required autoComplete="off" />}
        </FormField>
      )}
      <fieldset>
        <legend>Targets</legend>
        <p class="muted hint">Each request picks one target in proportion to its weight (scaled by health when adaptive).</p>
        {targets.map((target, index) => (
          <div class="target-row" key={target.key}>
            <div class="target-model">
              <FormField name={`targets.${index}.model`} label={`Target ${index + 1} model`} scope={scope} error={error}>
                {(aria) => <input {...aria} value={target.model} onInput={(event) => update(target.key, { model: (event.target as HTMLInputElement).value })} placeholder="provider/model" autoComplete="off" />}
              </FormField>
            </div>
            <div class="target-weight">
              <FormField name={`targets.${index}.weight`} label={`Target ${index + 1} weight`} scope={scope} error={error}>
                {(aria) => <input {...aria} type="number" min="0" step="any" inputMode="decimal" value={target.weight} onInput={(event) => update(target.key, { weight: (event.target as HTMLInputElement).value })} />}
              </FormField>
            </div>
            <button type="button" onClick={() => setTargets((rows) => rows.filter((r) => r.key !== target.key))} disabled={targets.length === 1}>
              Remove<span class="visually-hidden"> target {index + 1}</span>
            </button>
          </div>
        ))}
        {targetsProblem ? <p class="field-error">{targetsProblem}</p> : null}
        <button type="button" onClick={() => setTargets((rows) => [...rows, row()])}>
          Add target
        </button>
      </fieldset>
      <FormField name="fallbacks" label="Fallback chain" scope={scope} error={error} hint="tried in order when the targets fail: provider/model or route names, comma-separated">
        {(aria) => <input {...aria} name="fallbacks" defaultValue={route?.fallbacks.join(', ') ?? ''} autoComplete="off" />}
      </FormField>
      <FormField name="adaptive" label="Adaptive balancing" scope={scope} error={error} hint="scale weights by success rate, latency and rate limits">
        {(aria) => (
          <select {...aria} name="adaptive" defaultValue={route?.adaptive === undefined ? '' : String(route.adaptive)}>
            <option value="">as settings.routing says (on by default)</option>
            <option value="true">on</option>
            <option value="false">off</option>
          </select>
        )}
      </FormField>
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : route ? 'Save route' : 'Create route'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
