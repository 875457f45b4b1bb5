import { useState } from 'preact/hooks';
import { ApiError } from '../api/client.js';
import { asApiError } from '../api/config-api.js';
import { fieldValue, getPath, setPath } from '../api/fields.js';
import { DISABLED_FIELD, SERVER_NAME, SERVER_TYPES, serverError, type McpServerConfig, type McpServerType, type McpServerView } from '../api/mcp-api.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField } from '../components/form-field.js';
import { isGeneral } from '../components/scoped-error.js';
import { SpecField, useFocusOnOpen } from '../components/spec-field.js';

/**
 * Adds or changes one MCP server: the fields follow the type (SERVER_TYPES). An edit keeps whatever else the
 * server had; a token left empty keeps the stored one (the masked value goes back and the API restores it), and
 * masked header or env values sent back as shown keep theirs. `onSave` writes it (one `PATCH /api/config`); an
 * ApiError it throws, its param relative to the server (`url`), shows next to that field.
 */
export function McpServerForm({
  server,
  existing,
  onSave,
  onCancel,
}: {
  server: McpServerView | null;
  /** Names of the servers already configured. */
  existing: string[];
  onSave(name: string, config: McpServerConfig): Promise<void>;
  onCancel(): void;
}) {
  const [type, setType] = useState<McpServerType>(server?.type === 'http' ? 'http' : 'stdio');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const heading = useFocusOnOpen();
  const scope = server ? 'edit-mcp-server' : 'new-mcp-server';
  const same = server !== null && server.type === type;
  const fields = [...SERVER_TYPES[type].fields, DISABLED_FIELD];

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const name = server ? server.name : String(form.get('name') ?? '').trim();
    setError(null);
    if (!name) return setError(new ApiError(400, 'Name the server: its tools are named <server>__<tool>.', 'name'));
    if (!server && existing.includes(name)) return setError(new ApiError(409, `A server named '${name}' exists: edit it instead.`, 'name'));
    if (!SERVER_NAME.test(name)) return setError(new ApiError(400, 'Letters, digits and `-` (no `_`: tool names are <server>__<tool>), at most 63, starting with a letter or digit.', 'name'));
    let body: McpServerConfig;
    try {
      // A type changed starts from an empty server; an edit of the same type keeps the fields the form does not show.
      const start: Record<string, unknown> = same ? { ...server.config } : {};
      start.type = type;
      for (const field of fields) {
        if (field.kind === 'secret') {
          const typed = String(form.get(field.name) ?? '');
          if (typed) setPath(start, field.name, typed);
          else if (form.get(`${field.name}:remove`) === 'on') setPath(start, field.name, undefined);
        } else setPath(start, field.name, fieldValue(field, form));
      }
      body = start as McpServerConfig;
    } catch (err) {
      return setError(asApiError(err));
    }
    setBusy(true);
    try {
      await onSave(name, body);
    } catch (err) {
      setError(serverError(asApiError(err), name));
    } finally {
      setBusy(false);
    }
  };

  const known = ['name', 'type', ...fields.map((field) => field.name)];
  const title = server ? `Edit server ${server.name}` : 'Add a server';
  return (
    <form class="panel mcp-form" noValidate onSubmit={(event) => void submit(event)} aria-labelledby={`${scope}-title`} onKeyDown={(event) => event.key === 'Escape' && onCancel()}>
      <h3 id={`${scope}-title`} tabIndex={-1} ref={heading}>
        {title}
      </h3>
      {isGeneral(error, known) ? <ErrorNotice error={error} /> : null}
      <div class="form-grid">
        {server ? null : (
          <FormField name="name" label="Server name" scope={scope} error={error} hint="letters, digits and -; its tools are <name>__<tool>">
            {(aria) => <input {...aria} name="name" required autoComplete="off" />}
          </FormField>
        )}
        <FormField name="type" label="Type" scope={scope} error={error}>
          {(aria) => (
            <select {...aria} name="type" value={type} onChange={(event) => setType((event.target as HTMLSelectElement).value as McpServerType)}>
              {Object.entries(SERVER_TYPES).map(([value, { label }]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </FormField>
      </div>
      {/* Keyed by type: switching types gives fresh, empty controls. */}
      <div class="form-grid" key={type}>
        {fields.map((field) => {
          const stored = same ? getPath(server.config, field.name) : undefined;
          return (
            <div key={field.name}>
              <SpecField spec={field} scope={scope} error={error} stored={stored} />
              {field.kind === 'secret' && stored !== undefined ? (
                <label class="remove-secret">
                  <input type="checkbox" name={`${field.name}:remove`} /> remove it
                </label>
              ) : null}
            </div>
          );
        })}
      </div>
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : server ? 'Save server' : 'Add server'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
