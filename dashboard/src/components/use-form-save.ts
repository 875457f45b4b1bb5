import { useState } from 'preact/hooks';
import { ApiError } from '../api/client.js';
import { asApiError } from '../api/config-api.js';

/**
 * The submit cycle every config form shares: clear the last error, build the body (a typo the browser can catch,
 * such as a header without a colon, is an ApiError naming its field and stops here), write it while the button
 * says "Saving…", and show what the API refused next to the field it named. `toField` maps the API's full path
 * (`mcp.servers.x.url`) to the form's own field name (`url`).
 */
export function useFormSave() {
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  const save = async <T>(build: () => T, write: (body: T) => Promise<unknown>, toField: (error: ApiError) => ApiError | null = (e) => e): Promise<void> => {
    setError(null);
    let body: T;
    try {
      body = build();
    } catch (err) {
      return setError(asApiError(err));
    }
    setBusy(true);
    try {
      await write(body);
    } catch (err) {
      setError(toField(asApiError(err)));
    } finally {
      setBusy(false);
    }
  };

  return { error, setError, busy, save };
}

/**
 * The checks of a new item's name before anything is sent: present, not taken, and in the shape the API takes.
 * The messages are the forms' own (each says what the name is for), so the API's round trip is saved.
 */
export function nameProblem(name: string, rules: { isNew: boolean; existing: string[]; what: string; pattern?: RegExp; missing: string; shape?: string }): ApiError | null {
  if (!name) return new ApiError(400, rules.missing, 'name');
  if (rules.isNew && rules.existing.includes(name)) return new ApiError(409, `A ${rules.what} named '${name}' exists: edit it instead.`, 'name');
  if (rules.pattern && !rules.pattern.test(name)) return new ApiError(400, rules.shape ?? 'Not a valid name.', 'name');
  return null;
}
