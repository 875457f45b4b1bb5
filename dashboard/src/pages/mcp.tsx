import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../api/client.js';
import {
  argumentNames,
  bytes,
  destination,
  loadMcp,
  revertMcp,
  saveServer,
  type McpCall,
  type McpServerView,
  type McpToolView,
} from '../api/mcp-api.js';
import type { List } from '../api/types.js';
import { useApi } from '../api/use-api.js';
import { ConfigSectionHead } from '../components/config-section-head.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { DataTable, EditButton, Nothing } from '../components/data-table.js';
import { EditableList } from '../components/editable-list.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FilterSelect } from '../components/filter-select.js';
import { Empty, ListState } from '../components/states.js';
import { SuccessNotice, useActions } from '../components/use-actions.js';
import { ago, dateTime, ms } from '../format.js';
import { McpServerForm } from './mcp-server-form.js';
import './config-pages.css';
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
  const { notice, setNotice, actionError, setActionError, act } = useActions(loaded.reload);
  const state = loaded.data;
  const servers = state?.view.servers ?? [];
  const tools = state?.view.tools ?? [];


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
      <ConfigSectionHead
        id="mcp-title"
        title="MCP"
        source={state?.source}
        badge={{ noun: 'Servers', testId: 'mcp-source', file: "The config file's mcp section", none: 'Neither the file nor the API sets MCP servers' }}
        revertTitle="Revert MCP servers to the config file?"
        onRevert={() => void act(() => revertMcp(), "The API's MCP section is deleted: the config file's servers (if any) apply again.")}
      >
        <p>Every server set through the API or this page is removed (its connection closed), and the config file's MCP section applies again.</p>
      </ConfigSectionHead>
      <p class="muted">
        The Model Context Protocol servers tollgate connects to, and the tools it serves from them to models and clients under virtual keys (as{' '}
        <code>&lt;server&gt;__&lt;tool&gt;</code>). States and the call log refresh every {MCP_POLL_MS / 1000} s; changes apply at once, without a
        restart. Which tools a key may use is set with its <strong>MCP</strong> button on the <a href="#/keys">Keys & teams</a> page.
      </p>
      <ErrorNotice error={loaded.error ?? actionError} />
      <SuccessNotice notice={notice} />
      {state?.source === 'file' ? (
        <div class="notice notice-info" role="note" data-testid="mcp-file-note">
          These servers come from the config file. A change here writes the servers shown into the API's <code>mcp</code> section, which then
          replaces the file's as a whole (the file's <code>call_timeout_ms</code>, <code>max_result_bytes</code>, <code>max_answer_bytes</code> and <code>agent</code> settings
          fall back to their defaults unless set through the API); "Revert to file" goes back.
        </div>
      ) : null}

      <EditableList
        heading={<h2 id="mcp-servers-title">Servers</h2>}
        add={{ label: 'Add a server', onClick: () => setEditing({ server: null }), disabled: !state || (editing !== null && !editing.server) }}
        form={form}
        formIsNew={!editing?.server}
      >
        <ListState ready={!!state} loading={loaded.loading} what="MCP servers" count={servers.length} empty="No MCP servers configured. Add one (a stdio command or a streamable HTTP endpoint).">
          {state ? (
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
          ) : null}
        </ListState>
      </EditableList>

      <h2 id="mcp-tools-title">Tools</h2>
      {state ? <ToolsList servers={servers} tools={tools} /> : null}

      <CallLog servers={servers.map((server) => server.name)} />
    </section>
  );
}

const STATE_CLASS: Record<string, string> = { ready: 'status-2xx', connecting: 'status-4xx', reconnecting: 'status-4xx', failed: 'status-5xx' };

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge ${STATE_CLASS[state] ?? ''}`}>{state}</span>;
}

function ServersTable({ servers, onEdit, onToggle, onRemove }: { servers: McpServerView[]; onEdit(server: McpServerView): void; onToggle(server: McpServerView): void; onRemove(server: McpServerView): void }) {
  const now = Date.now();
  return (
    <DataTable labelledBy="mcp-servers-title" caption="MCP servers" columns={['Name', 'Type', 'State', 'Tools', 'Last error', 'Connected', 'PID', 'Destination', 'Actions']}>
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
              {server.last_error ?? <Nothing />}
            </td>
            <td>
              {server.connected_at ? (
                <time dateTime={server.connected_at} title={dateTime(server.connected_at)}>
                  {ago(server.connected_at, now)}
                </time>
              ) : (
                <Nothing />
              )}
            </td>
            <td data-col="pid">{server.type === 'stdio' && server.pid !== null ? server.pid : <Nothing />}</td>
            <td class="wrap" data-col="destination">
              <code>{where}</code>
              {extra.length ? <span class="muted"> · {extra.join(' · ')}</span> : null}
            </td>
            <td class="actions">
              <EditButton what="server" name={server.name} onClick={() => onEdit(server)} />
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
    </DataTable>
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
            <DataTable labelledBy={`mcp-tools-${name}`} caption={`Tools of ${name}`} columns={['Tool', 'Description', 'Arguments']}>
              {own.map((tool) => {
                const args = argumentNames(tool);
                return (
                  <tr key={tool.name} data-tool={tool.name}>
                    <th scope="row">
                      <code>{tool.name}</code>
                    </th>
                    <td class="wrap">{tool.description || <Nothing />}</td>
                    <td data-col="arguments">{args.length ? args.join(', ') : <Nothing>none</Nothing>}</td>
                  </tr>
                );
              })}
            </DataTable>
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
      <p class="muted">Every tool call, newest first (the newest {CALLS_LIMIT} shown): who, which tool, through which door, how it went, what the output guardrails did to the result; never the arguments or the result.</p>
      <form class="filters" role="search" aria-label="Filter the tool calls" onSubmit={(event) => event.preventDefault()}>
        <FilterSelect label="Server" value={server} all="all servers" options={[...servers, ...(server && !servers.includes(server) ? [server] : [])]} onChange={setServer} />
        <label>
          Key id
          <input type="search" value={keyId} autoComplete="off" onInput={(event) => setKeyId((event.target as HTMLInputElement).value)} />
        </label>
      </form>
      <ErrorNotice error={log.error} />
      <ListState ready={!!log.data} loading={log.loading} what="the tool calls" count={calls.length} empty={server || keyId ? 'No tool call matches the filter.' : 'No tool calls yet.'}>
        <DataTable labelledBy="mcp-calls-title" caption="Tool calls" columns={['Time', 'Key', 'Tool', 'Via', 'Status', 'Duration', 'Arguments', 'Result', 'Truncated', 'Guardrails', 'Error']}>
          {calls.map((call, index) => (
            <tr key={`${call.at}|${call.requestId ?? ''}|${call.server}|${call.tool}|${index}`} data-call-tool={`${call.server}__${call.tool}`} data-call-status={call.status} data-call-key={call.keyId ?? ''}>
              <td>
                <time dateTime={call.at}>{dateTime(call.at)}</time>
              </td>
              <td>{call.keyId ? <code>{call.keyId}</code> : <Nothing>no key</Nothing>}</td>
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
              <td class="wrap" data-col="guardrails">
                {/* What the output rules did to the result (redacted, withheld, flagged): the result itself is never shown. */}
                {call.guardrails && call.guardrails.length > 0 ? call.guardrails.map((label, index) => (
                      <Fragment key={label}>
                        {index > 0 ? ' ' : null}
                        <span class={`badge ${label.endsWith(':blocked') ? 'status-4xx' : ''}`}>{label.replace(/^output:/, '')}</span>
                      </Fragment>
                    )) : <Nothing>none</Nothing>}
              </td>
              <td class="wrap">{call.error ?? ''}</td>
            </tr>
          ))}
        </DataTable>
      </ListState>
    </>
  );
}
