import { useState } from 'preact/hooks';
import { api, type ApiError } from '../api/client.js';
import { asApiError } from '../api/config-api.js';
import { loadMcp, policyBody, type McpPolicy } from '../api/mcp-api.js';
import { useApi } from '../api/use-api.js';
import { EditorPanel } from '../components/editor-panel.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FormField, numberField } from '../components/form-field.js';
import { isGeneral, scopedError } from '../components/scoped-error.js';
import { SuccessNotice } from '../components/use-actions.js';
import './mcp.css';

const MODES = ['client', 'auto'] as const;

/**
 * A virtual key's MCP policy (`PATCH /api/keys/:id` with `{mcp}`): the servers and tools its callers may use (ticked
 * from the servers configured and the tools they offer now, plus patterns such as `docs__*`), the servers whose
 * tools every request of the key gets, the mode, and its tool calls per minute. One save writes the whole policy
 * (null when it sets nothing).
 */
export function McpKeyEditor({ path, name, current, onSaved, onClose }: { path: string; name: string; current: McpPolicy | null | undefined; onSaved(): void; onClose(): void }) {
  const loaded = useApi((signal) => loadMcp(signal), []);
  const [policy, setPolicy] = useState<McpPolicy>(current ?? {});
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const scope = 'key-mcp';
  const servers = loaded.data?.view.servers.map((server) => server.name) ?? [];
  const tools = loaded.data?.view.tools ?? [];
  const allow = policy.allow ?? [];
  // What a checkbox stands for: a server (every tool of it) or one tool; the rest of the list is typed as patterns.
  const checkable = new Set([...servers, ...tools.map((tool) => tool.name)]);
  const patterns = allow.filter((entry) => !checkable.has(entry));
  // A server attached that is no longer configured stays listed, so saving keeps it (the API says if it must go).
  const attachable = [...servers, ...(policy.servers ?? []).filter((server) => !servers.includes(server))];

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const formElement = event.target as HTMLFormElement;
    const form = new FormData(formElement);
    const typed = String(form.get('patterns') ?? '')
      .split(/[\n,]/)
      .map((entry) => entry.trim())
      .filter(Boolean);
    const mode = String(form.get('mode') ?? '');
    setError(null);
    setNotice(null);
    setBusy(true);
    try {
      const next: McpPolicy = {
        allow: [...new Set([...form.getAll('allow').map(String), ...typed])],
        servers: form.getAll('servers').map(String),
        mode: mode === 'client' || mode === 'auto' ? mode : undefined,
        tool_calls_per_minute: numberField(formElement, 'tool_calls_per_minute'),
      };
      const saved = await api.patch<{ mcp?: McpPolicy | null }>(path, { mcp: policyBody(next) });
      setPolicy(saved.mcp ?? {});
      setNotice(`Saved: the key's next tool call and request run under it.`);
      onSaved();
    } catch (err) {
      setError(scopedError(asApiError(err), 'mcp'));
    } finally {
      setBusy(false);
    }
  };

  return (
    <EditorPanel scope={scope} class="mcp-editor" title={<>MCP of the key “{name}”</>} onClose={onClose}>
      <p class="muted">
        Which MCP tools its callers may use (on <code>/v1/mcp/tools/call</code>, <code>/mcp</code> and in chat requests; its team's list applies
        too), and which servers' tools its chat requests get. Servers are configured on the <a href="#/mcp">MCP</a> page.
      </p>
      <ErrorNotice error={loaded.error} />
      <SuccessNotice notice={notice} />
      {/* Keyed by the saved policy and the servers known: a save or a late load gives fresh controls. */}
      <form class="config-form" key={`${JSON.stringify(policy)}|${[...checkable].join(',')}`} noValidate onSubmit={(event) => void submit(event)} aria-label={`MCP policy of ${name}`}>
        {isGeneral(error, ['allow', 'servers', 'mode', 'tool_calls_per_minute']) ? <ErrorNotice error={error} /> : null}
        <div class="form-grid">
          <fieldset class="field checks mcp-allow">
            <legend>May use</legend>
            {servers.length ? (
              servers.map((server) => (
                <div class="mcp-allow-server" key={server}>
                  <label>
                    <input type="checkbox" name="allow" value={server} defaultChecked={allow.includes(server)} /> {server} (every tool)
                  </label>
                  <div class="mcp-allow-tools">
                    {tools
                      .filter((tool) => tool.server === server)
                      .map((tool) => (
                        <label key={tool.name} title={tool.description ?? undefined}>
                          <input type="checkbox" name="allow" value={tool.name} defaultChecked={allow.includes(tool.name)} /> {tool.name}
                        </label>
                      ))}
                  </div>
                </div>
              ))
            ) : (
              <span class="muted">{loaded.loading ? 'Loading the MCP servers…' : 'No MCP servers configured.'}</span>
            )}
            <span class="muted hint">nothing ticked and no pattern: every tool of every server</span>
          </fieldset>
          <FormField name="allow" label="More servers, tools and patterns" scope={scope} error={error} hint="one a line: server, server__tool or server__*">
            {(aria) => <textarea {...aria} name="patterns" rows={3} defaultValue={patterns.join('\n')} />}
          </FormField>
          <fieldset class="field checks">
            <legend>Attach to its chat requests</legend>
            {attachable.length ? (
              attachable.map((server) => (
                <label key={server}>
                  <input type="checkbox" name="servers" value={server} defaultChecked={policy.servers?.includes(server)} /> {server}
                  {servers.includes(server) ? null : <span class="muted"> (not configured)</span>}
                </label>
              ))
            ) : (
              <span class="muted">No MCP servers configured.</span>
            )}
            <span class="muted hint">their tools are added to every chat request of the key</span>
          </fieldset>
          <FormField name="mode" label="Mode" scope={scope} error={error} hint="client: tool calls go back to the client; auto: tollgate runs MCP tools and calls the model again">
            {(aria) => (
              <select {...aria} name="mode">
                <option value="">default (client)</option>
                {MODES.map((mode) => (
                  <option key={mode} value={mode} selected={policy.mode === mode}>
                    {mode}
                  </option>
                ))}
              </select>
            )}
          </FormField>
          <FormField name="tool_calls_per_minute" label="Tool calls per minute" scope={scope} error={error} hint="empty: no limit">
            {(aria) => <input {...aria} name="tool_calls_per_minute" type="number" min="1" step="1" inputMode="numeric" defaultValue={policy.tool_calls_per_minute === undefined ? '' : String(policy.tool_calls_per_minute)} />}
          </FormField>
        </div>
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save MCP policy'}
        </button>
      </form>
    </EditorPanel>
  );
}
