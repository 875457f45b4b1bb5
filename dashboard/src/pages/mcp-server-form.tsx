import { useState } from 'preact/hooks';
import { getPath, readFields } from '../api/fields.js';
import { DISABLED_FIELD, SERVER_NAME, SERVER_TYPES, serverError, type McpServerConfig, type McpServerType, type McpServerView } from '../api/mcp-api.js';
import { ItemForm, NameAndKind, submittedName } from '../components/item-form.js';
import { SpecFields } from '../components/spec-field.js';
import { nameProblem, useFormSave } from '../components/use-form-save.js';

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
  const { error, busy, save } = useFormSave();
  const scope = server ? 'edit-mcp-server' : 'new-mcp-server';
  const same = server !== null && server.type === type;
  const fields = [...SERVER_TYPES[type].fields, DISABLED_FIELD];

  const submit = (form: FormData) => {
    const name = submittedName(form, server);
    return save(
      () => {
        const problem = nameProblem(name, { isNew: !server, existing, what: 'server', pattern: SERVER_NAME, missing: 'Name the server: its tools are named <server>__<tool>.', shape: 'Letters, digits and `-` (no `_`: tool names are <server>__<tool>), at most 63, starting with a letter or digit.' });
        if (problem) throw problem;
        // A type changed starts from an empty server; an edit of the same type keeps the fields the form does not show.
        const start: Record<string, unknown> = same ? { ...server.config } : {};
        start.type = type;
        return readFields(start, fields, form) as McpServerConfig;
      },
      (body) => onSave(name, body),
      (err) => serverError(err, name),
    );
  };

  return (
    <ItemForm scope={scope} class="mcp-form" heading="h3" title={server ? `Edit server ${server.name}` : 'Add a server'} error={error} known={['name', 'type', ...fields.map((field) => field.name)]} busy={busy} submitLabel={server ? 'Save server' : 'Add server'} onSubmit={(form) => void submit(form)} onCancel={onCancel}>
      <NameAndKind scope={scope} error={error} isNew={!server} nameLabel="Server name" nameHint="letters, digits and -; its tools are <name>__<tool>" kindField="type" kinds={SERVER_TYPES} kind={type} onKind={(value) => setType(value as McpServerType)} />
      <SpecFields kind={type} fields={fields} scope={scope} error={error} stored={(field) => (same ? getPath(server.config, field.name) : undefined)} removableSecrets />
    </ItemForm>
  );
}
