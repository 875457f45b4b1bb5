import { useState } from 'preact/hooks';
import { api, ApiError } from '../api/client.js';
import type { List, Team } from '../api/types.js';
import type { Loaded } from '../api/use-api.js';
import { BudgetBar } from '../components/budget-bar.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField, numberField } from '../components/form-field.js';
import { Empty, Loading } from '../components/states.js';
import { count } from '../format.js';
import { GuardrailsOverrideEditor } from './guardrails-override.js';
import { LimitsEditor } from './limits-editor.js';

/** Teams: a budget and rate limit their keys share. Lives on the keys page, which loads the list once for both. */
export function TeamsSection({ teams, onChange }: { teams: Loaded<List<Team>>; onChange(): void }) {
  const [error, setError] = useState<ApiError | null>(null);
  const [formError, setFormError] = useState<ApiError | null>(null);
  /** A create in flight: the button waits for it, so a double click does not make two teams of one name. */
  const [creating, setCreating] = useState(false);
  /** The team whose guardrails are being edited. */
  const [guarding, setGuarding] = useState<Team | null>(null);
  /** The team whose budget and rate limit are being edited. */
  const [limited, setLimited] = useState<Team | null>(null);
  const remove = async (team: Team): Promise<void> => {
    setError(null);
    try {
      await api.delete(`/teams/${encodeURIComponent(team.id)}`);
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, String(err)));
    }
    teams.reload();
    onChange();
  };
  const create = async (event: Event): Promise<void> => {
    event.preventDefault();
    const formElement = event.target as HTMLFormElement;
    const form = new FormData(formElement);
    setFormError(null);
    setCreating(true);
    try {
      await api.post('/teams', {
        name: String(form.get('name') ?? '').trim(),
        budget: numberField(formElement, 'budget'),
        budget_period: String(form.get('budget_period') ?? 'total'),
        rate_limit: numberField(formElement, 'rate_limit'),
      });
      formElement.reset();
      teams.reload();
    } catch (err) {
      setFormError(err instanceof ApiError ? err : new ApiError(0, String(err)));
    } finally {
      setCreating(false);
    }
  };
  return (
    <section aria-labelledby="teams-title">
      <h2 id="teams-title">Teams</h2>
      <ErrorNotice error={teams.error ?? error} />
      {teams.data ? (
        teams.data.data.length ? (
          <div class="table-wrap">
            <table>
              <caption class="visually-hidden">Teams</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Spend / budget</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Rate limit</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {teams.data.data.map((team) => (
                  <tr key={team.id}>
                    <th scope="row">{team.name}</th>
                    <td>
                      <BudgetBar spend={team.spend} budget={team.budget} period={team.budget_period} />
                    </td>
                    <td>{count(team.requests)}</td>
                    <td>{team.rate_limit ? `${team.rate_limit}/min` : '—'}</td>
                    <td class="actions">
                      <button type="button" onClick={() => setLimited(team)} aria-expanded={limited?.id === team.id}>
                        Limits<span class="visually-hidden"> of team {team.name}</span>
                      </button>
                      <button type="button" onClick={() => setGuarding(team)} aria-expanded={guarding?.id === team.id}>
                        Guardrails<span class="visually-hidden"> of team {team.name}</span>
                      </button>
                      <ConfirmButton label="Delete" title={`Delete the team “${team.name}”?`} confirmLabel="Delete team" onConfirm={() => void remove(team)}>
                        <p>Its budget and rate limit stop applying to its keys. This cannot be undone.</p>
                      </ConfirmButton>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <Empty>No teams yet.</Empty>
        )
      ) : teams.loading ? (
        <Loading what="teams" />
      ) : null}
      {limited ? (
        <LimitsEditor
          key={limited.id}
          what="team"
          path={`/teams/${encodeURIComponent(limited.id)}`}
          name={limited.name}
          current={{ budget: limited.budget, budget_period: limited.budget_period, rate_limit: limited.rate_limit }}
          onSaved={() => {
            teams.reload();
            onChange();
          }}
          onClose={() => setLimited(null)}
        />
      ) : null}
      {guarding ? (
        <GuardrailsOverrideEditor
          key={guarding.id}
          what="team"
          path={`/teams/${encodeURIComponent(guarding.id)}`}
          name={guarding.name}
          current={guarding.guardrails}
          onSaved={() => teams.reload()}
          onClose={() => setGuarding(null)}
        />
      ) : null}
      <form class="panel" noValidate onSubmit={(event) => void create(event)} aria-labelledby="create-team-title">
        <h3 id="create-team-title">Create a team</h3>
        {formError && !['name', 'budget', 'budget_period', 'rate_limit'].some((field) => formError.param?.startsWith(field)) ? <ErrorNotice error={formError} /> : null}
        <div class="form-grid">
          <FormField scope="team" name="name" label="Team name" error={formError}>
            {(aria) => <input {...aria} name="name" required autoComplete="off" />}
          </FormField>
          <FormField scope="team" name="budget" label="Budget (USD)" error={formError} hint="empty: no budget">
            {(aria) => <input {...aria} name="budget" type="number" min="0" step="any" inputMode="decimal" />}
          </FormField>
          <FormField scope="team" name="budget_period" label="Budget period" error={formError}>
            {(aria) => (
              <select {...aria} name="budget_period">
                {['total', 'daily', 'weekly', 'monthly'].map((period) => (
                  <option key={period} value={period}>
                    {period}
                  </option>
                ))}
              </select>
            )}
          </FormField>
          <FormField scope="team" name="rate_limit" label="Requests per minute" error={formError} hint="empty: no limit">
            {(aria) => <input {...aria} name="rate_limit" type="number" min="1" step="1" inputMode="numeric" />}
          </FormField>
        </div>
        <button type="submit" disabled={creating}>
          {creating ? 'Creating…' : 'Create team'}
        </button>
      </form>
    </section>
  );
}
