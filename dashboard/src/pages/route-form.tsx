import { useState } from 'preact/hooks';
import { apiPut, routePath, type RouteView } from '../api/config-api.js';
import { UNREADABLE_NUMBER, unreadableNumber } from '../api/fields.js';
import { fieldError } from '../components/error-notice.js';
import { FormField } from '../components/form-field.js';
import { ItemForm, submittedName } from '../components/item-form.js';
import { scopedError } from '../components/scoped-error.js';
import { nameProblem, useFormSave } from '../components/use-form-save.js';

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
  const { error, busy, save } = useFormSave();
  const scope = route ? 'edit-route' : 'new-route';

  const update = (key: number, change: Partial<TargetRow>): void => setTargets((rows) => rows.map((r) => (r.key === key ? { ...r, ...change } : r)));

  const submit = (form: FormData) => {
    const name = submittedName(form, route);
    return save(
      () => {
        const problem = nameProblem(name, { isNew: !route, existing, what: 'route', missing: 'Name the route: clients send it as the model.' });
        if (problem) throw problem;
        const fallbacks = String(form.get('fallbacks') ?? '').split(',').map((item) => item.trim()).filter(Boolean);
        const { name: _name, source: _source, ...rest } = route ?? ({} as Partial<RouteView>);
        return {
          ...rest,
          targets: targets.map((t, index) => {
            // A weight the browser could not read ("2e") reads '' here: refused, not sent as the default weight.
            if (form.get(`targets.${index}.weight`) === UNREADABLE_NUMBER) throw unreadableNumber(`targets.${index}.weight`);
            return { model: t.model.trim(), weight: t.weight.trim() === '' ? undefined : Number(t.weight) };
          }),
          fallbacks,
          adaptive: form.get('adaptive') === '' ? undefined : form.get('adaptive') === 'true',
        };
      },
      async (body) => {
        await apiPut(routePath(name), body);
        onSaved(name);
      },
      (err) => scopedError(err, `routes.${name}`),
    );
  };

  const targetsProblem = fieldError(error, 'targets') && error?.param === 'targets' ? error.message : null;
  return (
    <ItemForm scope={scope} class="route-form" title={route ? `Edit route ${route.name}` : 'Create a route'} error={error} known={['name', 'targets', 'fallbacks', 'adaptive']} busy={busy} submitLabel={route ? 'Save route' : 'Create route'} onSubmit={(form) => void submit(form)} onCancel={onCancel}>
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
                {(aria) => <input {...aria} name={`targets.${index}.weight`} type="number" min="0" step="any" inputMode="decimal" value={target.weight} onInput={(event) => update(target.key, { weight: (event.target as HTMLInputElement).value })} />}
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
    </ItemForm>
  );
}
