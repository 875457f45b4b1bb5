import { useState } from 'preact/hooks';
import { api, ApiError } from '../api/client.js';
import { EditorPanel } from '../components/editor-panel.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField, numberField } from '../components/form-field.js';
import { isGeneral } from '../components/scoped-error.js';
import { SuccessNotice } from '../components/use-actions.js';
import type { Team } from '../api/types.js';

const PERIODS = ['total', 'daily', 'weekly', 'monthly'] as const;
const FIELDS = ['budget', 'budget_period', 'rate_limit', 'models', 'team'];

/** What the editor shows and changes; `models` and `team` only for a key (a team has no model list). */
export interface Limits {
  budget: number | null;
  budget_period: string;
  rate_limit: number | null;
  models?: string[];
  team?: string | null;
}

/**
 * A key's or team's limits (`PATCH /api/keys/:id`, `/api/teams/:id`): budget and its period, requests per minute,
 * and a key's allowed models. Without it a key or team that ran out of budget could be raised only through the
 * API, and a key replaced by a new one (a new secret for every client). An emptied field is sent as none (null,
 * or every model), as the create forms read it. A key's team is chosen here too (given `teams`): moving a key puts
 * it under the new team's budget and policies, which only the API could do before. It is sent only when changed, so
 * saving limits never re-checks a key's MCP policy against a team it already had.
 */
export function LimitsEditor({
  what,
  path,
  name,
  current,
  teams,
  onSaved,
  onClose,
}: {
  what: 'key' | 'team';
  path: string;
  name: string;
  current: Limits;
  teams?: Team[];
  onSaved(): void;
  onClose(): void;
}) {
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const scope = `${what}-limits`;
  const hasModels = current.models !== undefined;
  const hasTeam = teams !== undefined && current.team !== undefined;
  // The team the key is under in this editor: the one shown when it opened, then the one last saved.
  const [savedTeam, setSavedTeam] = useState<string | null>(current.team ?? null);

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const formElement = event.target as HTMLFormElement;
    const form = new FormData(formElement);
    setError(null);
    setNotice(null);
    setBusy(true);
    try {
      const models = String(form.get('models') ?? '').split(',').map((model) => model.trim()).filter(Boolean);
      const team = String(form.get('team') ?? '') || null;
      const moved = hasTeam && team !== savedTeam;
      await api.patch(path, {
        budget: numberField(formElement, 'budget') ?? null,
        budget_period: String(form.get('budget_period') ?? 'total'),
        rate_limit: numberField(formElement, 'rate_limit') ?? null,
        ...(hasModels ? { models } : {}),
        ...(moved ? { team } : {}),
      });
      if (moved) setSavedTeam(team);
      setNotice(`Saved: the next request of the ${what === 'key' ? 'key' : "team's keys"} runs under these limits.`);
      onSaved();
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, String(err)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <EditorPanel scope={scope} class="key-limits-editor" title={<>Limits of the {what} “{name}”</>} onClose={onClose}>
      <SuccessNotice notice={notice} />
      <form class="config-form" noValidate onSubmit={(event) => void submit(event)} aria-label={`Limits of ${what === 'team' ? 'team ' : ''}${name}`}>
        {isGeneral(error, FIELDS) ? <ErrorNotice error={error} /> : null}
        <div class="form-grid">
          <FormField name="budget" label="Budget (USD)" scope={scope} error={error} hint="empty: no budget">
            {(aria) => <input {...aria} name="budget" type="number" min="0" step="any" inputMode="decimal" defaultValue={current.budget === null ? '' : String(current.budget)} />}
          </FormField>
          <FormField name="budget_period" label="Budget period" scope={scope} error={error}>
            {(aria) => (
              <select {...aria} name="budget_period">
                {PERIODS.map((period) => (
                  <option key={period} value={period} selected={current.budget_period === period}>
                    {period}
                  </option>
                ))}
              </select>
            )}
          </FormField>
          <FormField name="rate_limit" label="Requests per minute" scope={scope} error={error} hint="empty: no limit">
            {(aria) => <input {...aria} name="rate_limit" type="number" min="1" step="1" inputMode="numeric" defaultValue={current.rate_limit === null ? '' : String(current.rate_limit)} />}
          </FormField>
          {hasTeam ? (
            <FormField name="team" label="Team" scope={scope} error={error} hint="its budget and policies apply to the key's next request">
              {(aria) => (
                <select {...aria} name="team">
                  <option value="" selected={savedTeam === null}>
                    no team
                  </option>
                  {(teams ?? []).map((team) => (
                    <option key={team.id} value={team.id} selected={savedTeam === team.id}>
                      {team.name}
                    </option>
                  ))}
                  {savedTeam !== null && !(teams ?? []).some((team) => team.id === savedTeam) ? (
                    // A team not in the list loaded (deleted since, or past the list's first page) stays selectable as it is.
                    <option value={savedTeam} selected>
                      {savedTeam}
                    </option>
                  ) : null}
                </select>
              )}
            </FormField>
          ) : null}
          {hasModels ? (
            <FormField name="models" label="Allowed models" scope={scope} error={error} hint="comma-separated, e.g. openai/*, chat-default; empty: all">
              {(aria) => <input {...aria} name="models" autoComplete="off" defaultValue={current.models?.join(', ')} />}
            </FormField>
          ) : null}
        </div>
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save limits'}
        </button>
      </form>
    </EditorPanel>
  );
}
