import { useState } from 'preact/hooks';
import type { ApiError } from '../api/client.js';
import { asApiError, testModel, type TestResult } from '../api/config-api.js';

/**
 * "Test": one chat completion of at most one token through tollgate (`<provider>/<model>`), as a client would
 * send it, so it proves the key, the base URL and the model name together. With several keys the balancer
 * picks one, as for any request.
 */
export function ProviderTest({ provider, models }: { provider: string; models: string[] }) {
  const [result, setResult] = useState<TestResult | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const listId = `test-models-${provider}`;
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const model = String(new FormData(event.target as HTMLFormElement).get('model') ?? '').trim();
    setResult(null);
    setError(null);
    if (!model) {
      setError(asApiError(new Error('Type the model to call, as the provider names it (e.g. gpt-4o-mini).')));
      return;
    }
    setBusy(true);
    try {
      setResult(await testModel(`${provider}/${model}`));
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="panel" noValidate onSubmit={(event) => void submit(event)} aria-labelledby="test-provider-title">
      <h2 id="test-provider-title">Test</h2>
      <p class="muted">A one-token chat completion through tollgate, not served from the cache. It costs one call to {provider}.</p>
      <div class="field">
        <label for="test-model">Model</label>
        <span class="inline-form">
          <span class="muted">{provider}/</span>
          <input id="test-model" name="model" autoComplete="off" list={models.length ? listId : undefined} aria-describedby="test-result" />
          {models.length ? (
            <datalist id={listId}>
              {models.map((model) => (
                <option key={model} value={model} />
              ))}
            </datalist>
          ) : null}
          <button type="submit" disabled={busy}>
            {busy ? 'Testing…' : 'Test'}
          </button>
        </span>
      </div>
      <div id="test-result" role="status" aria-live="polite">
        {result ? (
          <p class="notice notice-success" data-testid="test-result">
            <strong>Works</strong>: {result.provider ?? provider} answered{result.model ? ` as ${result.model}` : ''} in {result.ms} ms
            {result.text ? <> (“{result.text}”)</> : null}.
          </p>
        ) : null}
        {error ? (
          <p class="notice notice-error" data-testid="test-result">
            <strong>Failed</strong>
            {error.status ? ` (${error.status})` : ''}: {error.message}
          </p>
        ) : null}
      </div>
    </form>
  );
}
