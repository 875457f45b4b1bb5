import { useState } from 'preact/hooks';
import { api, type ApiError } from '../api/client.js';
import { asApiError } from '../api/config-api.js';
import {
  argumentNames,
  bytes,
  destination,
  loadMcp,
  revertMcp,
  saveServer,
  type McpCall,
  type McpServerView,
  type McpSource,
  type McpToolView,
} from '../api/mcp-api.js';
import type { List } from '../api/types.js';
import { useApi } from '../api/use-api.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { ErrorNotice } from '../components/error-notice.js';
import { Empty, Loading } from '../components/states.js';
import { ago, dateTime, ms } from '../format.js';
import { McpServerForm } from './mcp-server-form.js';
import './config-pages.css';
import './alerts.css';
import './mcp.css';

/** The servers' states and the call log refresh this often. */
export const MCP_POLL_MS = 3_000;
const CALLS_LIMIT = 50;

type Editing = { server: McpServerView | null } | null;

/**
 * MCP (`/api/mcp`): the configured MCP servers with their connection state (added, edited, disabled and removed, each
 * change one `PATCH /api/config` of the `mcp` section, applied without a restart), the tools they offer, and the
 * tool-call log. Which tools a key may use is set on the keys page.
 */
export function McpPage() {
  const loaded = useApi((signal) => loadMcp(signal), [], MCP_POLL_MS);
  const [editing, setEditing] = useState<Editing>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [actionError, setActionError] = useState<ApiError | null>(null);
  const state = loaded.data;
  const servers = state?.view.servers ?? [];
  const tools = state?.view.tools ?? [];

  const act = async (change: () => Promise<unknown>, done: string): Promise<void> => {
    setActionError(null);
    setNotice(null);
    try {
      await change();
      setNotice(done);
    } catch (err) {
      setActionError(asApiError(err));
    }
    loaded.reload();
  };

  const form =
    editing && state ? (
      <McpServerForm
        key={editing.server ? `edit:${editing.server.name}` : 'new'}
        server={editing.server}
        existing={servers.map((server) => server.name)}
        onCancel={() => setEditing(null)}
        onSave={async (name, config) => {
          await saveServer(state, name, config);
          setEditing(null);
          setActionError(null);
          setNotice(`Server ${name} saved: ${config.disabled ? 'it is not started' : 'it connects now'}, without a restart.`);
          loaded.reload();
        }}
      />
    ) : null;

  return (
    <section aria-labelledby="mcp-title" class="mcp-page">
      <div class="page-head">
        <h1 id="mcp-title">MCP</h1>
        <div class="actions">
          {state ? <McpSourceBadge source={state.source} /> : null}
          {state?.source === 'api' ? (
            <ConfirmButton label="Revert to file" title="Revert MCP servers to the config file?" confirmLabel="Revert to file" onConfirm={() => void act(() => revertMcp(), "The API's MCP section is deleted: the config file's servers (if any) apply again.")}>
              <p>Every server set through the API or this page is removed (its connection closed), and the config file's MCP section applies again.</p>
            </ConfirmButton>
          ) : null}
        </div>
      </div>
      <p class="muted">
        The Model Context Protocol servers tollgate connects to, and the tools it serves from them to models and clients under virtual keys (as{' '}
        <code>&lt;server&gt;__&lt;tool&gt;</code>). States and the call log refresh every {MCP_POLL_MS / 1000} s; changes apply at once, without a
        restart. Which tools a key may use is set with its <strong>MCP</strong> button on the <a href="#/keys">Keys & teams</a> page.
      </p>
      <ErrorNotice error={loaded.error ?? actionError} />
      {notice ? (
        <div class="notice notice-success" role="status">
          {notice}
        </div>
      ) : null}
      {state?.source === 'file' ? (
        <div class="notice notice-info" role="note" data-testid="mcp-file-note">
          These servers come from the config file. A change here writes the servers shown into the API's <code>mcp</code> section, which then
          replaces the file's as a whole (the file's <code>call_timeout_ms</code>, <code>max_result_bytes</code> and <code>agent</code> settings
          fall back to their defaults unless set through the API); "Revert to file" goes back.
        </div>
      ) : null}

      <div class="page-head">
        <h2 id="mcp-servers-title">Servers</h2>
        <button type="button" onClick={() => setEditing({ server: null })} disabled={!state || (editing !== null && !editing.server)}>
          Add a server
        </button>
      </div>
      {editing && !editing.server ? form : null}
      {state ? (
        servers.length ? (
          <ServersTable
            servers={servers}
            onEdit={(server) => setEditing({ server })}
            onToggle={(server) =>
              void act(
                () => saveServer(state, server.name, { ...server.config, disabled: server.config.disabled ? undefined : true }),
                server.config.disabled ? `Server ${server.name} enabled: it connects now.` : `Server ${server.name} disabled: its connection is closed.`,
              )
            }
            onRemove={(server) => void act(() => saveServer(state, server.name, null), `Server ${server.name} removed: its connection is closed and its tools are gone.`)}
          />
        ) : (
          <Empty>No MCP servers configured. Add one (a stdio command or a streamable HTTP endpoint).</Empty>
        )
      ) : loaded.loading ? (
        <Loading what="MCP servers" />
      ) : null}
      {editing?.server ? form : null}

      <h2 id="mcp-tools-title">Tools</h2>
      {state ? <ToolsList servers={servers} tools={tools} /> : null}

      <CallLog servers={servers.map((server) => server.name)} />
    </section>
  );
}

function McpSourceBadge({ source }: { source: McpSource }) {
  const text = source === 'api' ? 'from the API' : source === 'file' ? 'from the config file' : 'none configured';
  return (
    <span
      class={`badge source-${source}`}
      data-testid="mcp-source"
      title={source === 'api' ? 'Set through the API or this page: "Revert to file" goes back to the file' : source === 'file' ? "The config file's mcp section" : 'Neither the file nor the API sets MCP servers'}
    >
      Servers {text}
    </span>
  );
}

const STATE_CLASS: Record<string, string> = { ready: 'status-2xx', connecting: 'status-4xx', reconnecting: 'status-4xx', failed: 'status-5xx' };

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge ${STATE_CLASS[state] ?? ''}`}>{state}</span>;
}

function ServersTable({ servers, onEdit, onToggle, onRemove }: { servers: McpServerView[]; onEdit(server: McpServerView): void; onToggle(server: McpServerView): void; onRemove(server: McpServerView): void }) {
  const now = Date.now();
  return (
    <div class="table-wrap" role="region" aria-labelledby="mcp-servers-title">
      <table>
        <caption class="visually-hidden">MCP servers</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Type</th>
            <th scope="col">State</th>
            <th scope="col">Tools</th>
            <th scope="col">Last error</th>
            <th scope="col">Connected</th>
            <th scope="col">PID</th>
            <th scope="col">Destination</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {servers.map((server) => {
            const { where, extra } = destination(server.config);
            return (
              <tr key={server.name} data-server={server.name}>
                <th scope="row">{server.name}</th>
                <td>{server.type}</td>
                <td data-col="state">
                  <StateBadge state={server.state} />
                  {server.config.disabled ? <span class="muted"> (disabled)</span> : null}
                  {server.attempts > 1 && server.state !== 'ready' ? <span class="muted"> attempt {server.attempts}</span> : null}
                </td>
                <td data-col="tools">{server.tools}</td>
                <td class="wrap" data-col="error">
                  {server.last_error ?? <span class="muted">—</span>}
                </td>
                <td>
                  {server.connected_at ? (
                    <time dateTime={server.connected_at} title={dateTime(server.connected_at)}>
                      {ago(server.connected_at, now)}
                    </time>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
                <td data-col="pid">{server.type === 'stdio' && server.pid !== null ? server.pid : <span class="muted">—</span>}</td>
                <td class="wrap" data-col="destination">
                  <code>{where}</code>
                  {extra.length ? <span class="muted"> · {extra.join(' · ')}</span> : null}
                </td>
                <td class="actions">
                  <button type="button" onClick={() => onEdit(server)}>
                    Edit<span class="visually-hidden"> server {server.name}</span>
                  </button>
                  <button type="button" onClick={() => onToggle(server)}>
                    {server.config.disabled ? 'Enable' : 'Disable'}
                    <span class="visually-hidden"> server {server.name}</span>
                  </button>
                  <ConfirmButton label="Remove" title={`Remove the server “${server.name}”?`} confirmLabel="Remove server" onConfirm={() => onRemove(server)}>
                    <p>Its connection is closed (a stdio server's process ends) and its tools are no longer offered, from now on.</p>
                  </ConfirmButton>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** The tools of the ready servers, grouped by server, with their descriptions and argument names. */
function ToolsList({ servers, tools }: { servers: McpServerView[]; tools: McpToolView[] }) {
  if (!tools.length) return <Empty>No tools: no server is ready, or the ready ones offer none.</Empty>;
  const names = [...new Set([...servers.map((server) => server.name), ...tools.map((tool) => tool.server)])].filter((name) => tools.some((tool) => tool.server === name));
  return (
    <>
      {names.map((name) => {
        const own = tools.filter((tool) => tool.server === name);
        return (
          <div key={name} class="mcp-tools" data-tools-of={name}>
            <h3 id={`mcp-tools-${name}`}>
              {name} <span class="muted">({own.length} {own.length === 1 ? 'tool' : 'tools'})</span>
            </h3>
            <div class="table-wrap" role="region" aria-labelledby={`mcp-tools-${name}`}>
              <table>
                <caption class="visually-hidden">Tools of {name}</caption>
                <thead>
                  <tr>
                    <th scope="col">Tool</th>
                    <th scope="col">Description</th>
                    <th scope="col">Arguments</th>
                  </tr>
                </thead>
                <tbody>
                  {own.map((tool) => {
                    const args = argumentNames(tool);
                    return (
                      <tr key={tool.name} data-tool={tool.name}>
                        <th scope="row">
                          <code>{tool.name}</code>
                        </th>
                        <td class="wrap">{tool.description || <span class="muted">—</span>}</td>
                        <td data-col="arguments">{args.length ? args.join(', ') : <span class="muted">none</span>}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          </div>
        );
      })}
      <p class="muted">An argument marked * is required.</p>
    </>
  );
}

function CallLog({ servers }: { servers: string[] }) {
  const [server, setServer] = useState('');
  const [keyId, setKeyId] = useState('');
  const log = useApi((signal) => api.get<List<McpCall>>('/mcp/calls', { limit: CALLS_LIMIT, server, key_id: keyId.trim() }, signal), [server, keyId], MCP_POLL_MS);
  const calls = log.data?.data ?? [];
  return (
    <>
      <h2 id="mcp-calls-title">Tool calls</h2>
      <p class="muted">Every tool call, newest first (the newest {CALLS_LIMIT} shown): who, which tool, through which door, how it went; never the arguments or the result.</p>
      <form class="filters" role="search" aria-label="Filter the tool calls" onSubmit={(event) => event.preventDefault()}>
        <label>
          Server
          <select value={server} onChange={(event) => setServer((event.target as HTMLSelectElement).value)}>
            <option value="">all servers</option>
            {[...servers, ...(server && !servers.includes(server) ? [server] : [])].map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Key id
          <input type="search" value={keyId} autoComplete="off" onInput={(event) => setKeyId((event.target as HTMLInputElement).value)} />
        </label>
      </form>
      <ErrorNotice error={log.error} />
      {log.data ? (
        calls.length ? (
          <div class="table-wrap" role="region" aria-labelledby="mcp-calls-title">
            <table>
              <caption class="visually-hidden">Tool calls</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Key</th>
                  <th scope="col">Tool</th>
                  <th scope="col">Via</th>
                  <th scope="col">Status</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Arguments</th>
                  <th scope="col">Result</th>
                  <th scope="col">Truncated</th>
                  <th scope="col">Error</th>
                </tr>
              </thead>
              <tbody>
                {calls.map((call, index) => (
                  <tr key={`${call.at}|${call.requestId ?? ''}|${call.server}|${call.tool}|${index}`} data-call-tool={`${call.server}__${call.tool}`} data-call-status={call.status} data-call-key={call.keyId ?? ''}>
                    <td>
                      <time dateTime={call.at}>{dateTime(call.at)}</time>
                    </td>
                    <td>{call.keyId ? <code>{call.keyId}</code> : <span class="muted">no key</span>}</td>
                    <td>
                      <code>
                        {call.server}__{call.tool}
                      </code>
                    </td>
                    <td>{call.via}</td>
                    <td data-col="status">
                      <span class={`badge ${call.status === 'ok' ? (call.isError ? 'status-4xx' : 'status-2xx') : 'status-5xx'}`} title={call.isError ? 'The tool reported its own failure (isError)' : undefined}>
                        {call.status}
                        {call.status === 'ok' && call.isError ? ' (tool error)' : ''}
                      </span>
                    </td>
                    <td>{ms(call.durationMs)}</td>
                    <td>{bytes(call.argumentsBytes)}</td>
                    <td>{bytes(call.resultBytes)}</td>
                    <td>{call.truncated ? 'yes' : 'no'}</td>
                    <td class="wrap">{call.error ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <Empty>{server || keyId ? 'No tool call matches the filter.' : 'No tool calls yet.'}</Empty>
        )
      ) : log.loading ? (
        <Loading what="the tool calls" />
      ) : null}
    </>
  );
}
