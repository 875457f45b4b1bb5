import { useState } from 'preact/hooks';
import { api, ApiError } from '../api/client.js';
import type { VirtualKey } from '../api/types.js';
import { EditorPanel } from '../components/editor-panel.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField, numberField } from '../components/form-field.js';
import { isGeneral } from '../components/scoped-error.js';
import { SuccessNotice } from '../components/use-actions.js';

const PERIODS = ['total', 'daily', 'weekly', 'monthly'] as const;
const FIELDS = ['budget', 'budget_period', 'rate_limit', 'models'];

/**
 * A key's limits (`PATCH /api/keys/:id`): budget and its period, requests per minute, allowed models. Without it a
 * key that ran out of budget could be raised only through the API, or replaced by a new key (and a new secret for
 * every client). An emptied field is sent as none (null, or every model), as the create form reads it.
 */
export function KeyLimitsEditor({ path, keyView, onSaved, onClose }: { path: string; keyView: VirtualKey; onSaved(): void; onClose(): void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const scope = 'key-limits';

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const formElement = event.target as HTMLFormElement;
    const form = new FormData(formElement);
    setError(null);
    setNotice(null);
    setBusy(true);
    try {
      const models = String(form.get('models') ?? '').split(',').map((model) => model.trim()).filter(Boolean);
      await api.patch(path, {
        budget: numberField(formElement, 'budget') ?? null,
        budget_period: String(form.get('budget_period') ?? 'total'),
        rate_limit: numberField(formElement, 'rate_limit') ?? null,
        models,
      });
      setNotice('Saved: the next request of the key runs under these limits.');
      onSaved();
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, String(err)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <EditorPanel scope={scope} class="key-limits-editor" title={<>Limits of the key “{keyView.name}”</>} onClose={onClose}>
      <SuccessNotice notice={notice} />
      <form class="config-form" noValidate onSubmit={(event) => void submit(event)} aria-label={`Limits of ${keyView.name}`}>
        {isGeneral(error, FIELDS) ? <ErrorNotice error={error} /> : null}
        <div class="form-grid">
          <FormField name="budget" label="Budget (USD)" scope={scope} error={error} hint="empty: no budget">
            {(aria) => <input {...aria} name="budget" type="number" min="0" step="any" inputMode="decimal" defaultValue={keyView.budget === null ? '' : String(keyView.budget)} />}
          </FormField>
          <FormField name="budget_period" label="Budget period" scope={scope} error={error}>
            {(aria) => (
              <select {...aria} name="budget_period">
                {PERIODS.map((period) => (
                  <option key={period} value={period} selected={keyView.budget_period === period}>
                    {period}
                  </option>
                ))}
              </select>
            )}
          </FormField>
          <FormField name="rate_limit" label="Requests per minute" scope={scope} error={error} hint="empty: no limit">
            {(aria) => <input {...aria} name="rate_limit" type="number" min="1" step="1" inputMode="numeric" defaultValue={keyView.rate_limit === null ? '' : String(keyView.rate_limit)} />}
          </FormField>
          <FormField name="models" label="Allowed models" scope={scope} error={error} hint="comma-separated, e.g. openai/*, chat-default; empty: all">
            {(aria) => <input {...aria} name="models" autoComplete="off" defaultValue={keyView.models.join(', ')} />}
          </FormField>
        </div>
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save limits'}
        </button>
      </form>
    </EditorPanel>
  );
}
