import { useState } from 'preact/hooks';
import {
  CHANNEL_TYPES,
  RULE_KINDS,
  channelPath,
  condition,
  hasReference,
  rulePath,
  subjectText,
  type AlertChannelView,
  type AlertRuleView,
  type AlertsView,
  type DeliveryLine,
  type OpenAlertView,
} from '../api/alerts-api.js';
import { api, type ApiError } from '../api/client.js';
import { asApiError } from '../api/config-api.js';
import type { List } from '../api/types.js';
import { useApi } from '../api/use-api.js';
import { ConfigSectionHead } from '../components/config-section-head.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { DataTable, EditButton, Nothing } from '../components/data-table.js';
import { EditableList } from '../components/editable-list.js';
import { ErrorNotice } from '../components/error-notice.js';
import { FilterSelect } from '../components/filter-select.js';
import { Empty, ListState, Loading } from '../components/states.js';
import { SuccessNotice, useActions } from '../components/use-actions.js';
import { ago, dateTime, ms } from '../format.js';
import { ChannelForm, RuleForm } from './alert-forms.js';
import './config-pages.css';
import './alerts.css';

/** Open alerts and the delivery log refresh this often (the section itself is read again after each change). */
export const ALERTS_POLL_MS = 5_000;
const LOG_LIMIT = 50;

type Editing = { what: 'channel'; item: AlertChannelView | null } | { what: 'rule'; item: AlertRuleView | null } | null;

/**
 * Alerts (`/api/alerts`): what is firing now, the channels notifications go to (with a test delivery), the rules,
 * and the delivery log. Where the section comes from (the config file or the API) is shown; an API section can be
 * dropped to go back to the file's.
 */
export function AlertsPage() {
  const section = useApi((signal) => api.get<AlertsView>('/alerts', {}, signal), []);
  const open = useApi((signal) => api.get<List<OpenAlertView>>('/alerts/open', {}, signal), [], ALERTS_POLL_MS);
  const [editing, setEditing] = useState<Editing>(null);
  const { notice, setNotice, actionError, act } = useActions(section.reload);
  const view = section.data;
  const channels = view?.channels ?? [];
  const rules = view?.rules ?? [];
  // The file's section reads secrets from env:/file: references: the API cannot change it item by item (409).
  const locked = view?.source === 'file' && hasReference([channels, rules]);

  const saved = (what: string) => (name: string) => {
    setEditing(null);
    setNotice(`${what} ${name} saved: it applies at once.`);
    section.reload();
  };

  const channelForm =
    editing?.what === 'channel' ? (
      <ChannelForm key={editing.item ? `edit:${editing.item.name}` : 'new'} channel={editing.item} existing={channels.map((c) => c.name)} onCancel={() => setEditing(null)} onSaved={saved('Channel')} />
    ) : null;
  const ruleForm =
    editing?.what === 'rule' ? (
      <RuleForm key={editing.item ? `edit:${editing.item.name}` : 'new'} rule={editing.item} existing={rules.map((r) => r.name)} channels={channels.map((c) => c.name)} onCancel={() => setEditing(null)} onSaved={saved('Rule')} />
    ) : null;

  return (
    <section aria-labelledby="alerts-title" class="alerts-page">
      <ConfigSectionHead
        id="alerts-title"
        title="Alerts"
        source={view?.source}
        badge={{ noun: 'Alerts', testId: 'alerts-source', file: "The config file's alerts section", none: 'Neither the file nor the API sets alerts' }}
        revertTitle="Revert alerts to the config file?"
        onRevert={() => void act(() => api.delete('/alerts'), "The API's alerts are deleted: the config file's section (if any) applies again.")}
      >
        <p>Every channel and rule set through the API or this page is deleted, and the config file's alerts apply again.</p>
      </ConfigSectionHead>
      <p class="muted">
        Rules watch the gateway's events and notify channels when a condition starts and when it ends. Open alerts and deliveries refresh every{' '}
        {ALERTS_POLL_MS / 1000} s; changes apply at once, without a restart.
      </p>
      <ErrorNotice error={section.error ?? actionError} />
      <SuccessNotice notice={notice} />
      {locked ? (
        <div class="notice notice-info" role="note" data-testid="alerts-locked">
          These alerts come from the config file, which reads secrets from <code>env:</code> or <code>file:</code> references. They cannot be
          changed here one channel or rule at a time: change them in the file, or replace the whole section with <code>PUT /api/alerts</code>{' '}
          (secrets as values).
        </div>
      ) : null}

      <h2 id="open-alerts-title">Open alerts</h2>
      <ErrorNotice error={open.error} />
      {open.data ? <OpenAlerts alerts={open.data.data} rules={rules} /> : open.loading ? <Loading what="open alerts" /> : null}

      <EditableList
        heading={<h2 id="channels-title">Channels</h2>}
        add={locked ? null : { label: 'Add a channel', onClick: () => setEditing({ what: 'channel', item: null }), disabled: editing?.what === 'channel' && !editing.item }}
        form={channelForm}
        formIsNew={!editing?.item}
      >
        <ListState ready={!!view} loading={section.loading} what="channels" count={channels.length} empty="No channels: notifications have nowhere to go. Add one (a webhook, say).">
          <ChannelsTable
            channels={channels}
            locked={locked}
            onEdit={(item) => setEditing({ what: 'channel', item })}
            onDelete={(item) => void act(() => api.delete(channelPath(item.name)), `Channel ${item.name} deleted.`)}
          />
        </ListState>
      </EditableList>

      <EditableList
        heading={<h2 id="rules-title">Rules</h2>}
        add={locked ? null : { label: 'Add a rule', onClick: () => setEditing({ what: 'rule', item: null }), disabled: editing?.what === 'rule' && !editing.item }}
        form={ruleForm}
        formIsNew={!editing?.item}
      >
        <ListState ready={!!view} loading={section.loading} what="rules" count={rules.length} empty="No rules: nothing alerts yet.">
          <RulesTable rules={rules} locked={locked} onEdit={(item) => setEditing({ what: 'rule', item })} onDelete={(item) => void act(() => api.delete(rulePath(item.name)), `Rule ${item.name} deleted.`)} />
        </ListState>
      </EditableList>

      <DeliveryLog channels={channels.map((c) => c.name)} rules={rules.map((r) => r.name)} />
    </section>
  );
}

function SeverityBadge({ severity }: { severity: string | undefined }) {
  const level = severity ?? 'warning';
  return <span class={`badge severity-${level}`}>{level}</span>;
}

function OpenAlerts({ alerts, rules }: { alerts: OpenAlertView[]; rules: AlertRuleView[] }) {
  if (!alerts.length) return <Empty>Nothing is firing.</Empty>;
  const now = Date.now();
  return (
    <DataTable labelledBy="open-alerts-title" caption="Open alerts" columns={['Rule', 'Kind', 'Severity', 'Subject', 'Summary', 'Since', 'Notified']}>
      {alerts.map((alert) => {
        const rule = rules.find((item) => item.name === alert.rule);
        return (
          <tr key={alert.id} data-alert={alert.id} data-rule={alert.rule}>
            <th scope="row">{alert.rule}</th>
            <td>{RULE_KINDS[alert.kind]?.label ?? alert.kind}</td>
            <td>{rule ? <SeverityBadge severity={rule.severity} /> : <Nothing />}</td>
            <td>{subjectText(alert.subject)}</td>
            <td class="wrap">{alert.summary}</td>
            <td>
              <time dateTime={alert.since} title={dateTime(alert.since)}>
                {ago(alert.since, now)}
              </time>
            </td>
            <td>{alert.notified ? 'yes' : <span title="It fired inside the rule's cooldown, so it was not sent">no (cooldown)</span>}</td>
          </tr>
        );
      })}
    </DataTable>
  );
}

/** Where a channel delivers, as the API shows it (secrets masked), and which of its secrets are set. */
function destination(channel: AlertChannelView): { where: string; secrets: string[] } {
  const spec = CHANNEL_TYPES[channel.type];
  const fields = spec?.destination ?? ['url'];
  const where = fields
    .map((field) => channel[field])
    .filter((value) => value !== undefined && value !== null && value !== '')
    .map((value) => (Array.isArray(value) ? value.join(', ') : String(value)))
    .join(' via ');
  const secrets = (spec?.fields ?? []).filter((field) => field.kind === 'secret' && !fields.includes(field.name) && typeof channel[field.name] === 'string').map((field) => `${field.label.toLowerCase()} ${String(channel[field.name])}`);
  return { where: where || (channel.type === 'pagerduty' ? 'PagerDuty (default events URL)' : '—'), secrets };
}

type TestState = { busy: true } | { busy: false; line: DeliveryLine } | { busy: false; error: ApiError };

function ChannelsTable({ channels, locked, onEdit, onDelete }: { channels: AlertChannelView[]; locked: boolean; onEdit(channel: AlertChannelView): void; onDelete(channel: AlertChannelView): void }) {
  const [tests, setTests] = useState<Record<string, TestState>>({});
  const test = async (name: string): Promise<void> => {
    setTests((all) => ({ ...all, [name]: { busy: true } }));
    try {
      const line = await api.post<DeliveryLine>(`${channelPath(name)}/test`, {});
      setTests((all) => ({ ...all, [name]: { busy: false, line } }));
    } catch (err) {
      setTests((all) => ({ ...all, [name]: { busy: false, error: asApiError(err) } }));
    }
  };
  return (
    <DataTable labelledBy="channels-title" caption="Alert channels" columns={['Name', 'Type', 'Destination', 'Test', 'Actions']}>
      {channels.map((channel) => {
        const { where, secrets } = destination(channel);
        const state = tests[channel.name];
        return (
          <tr key={channel.name} data-channel={channel.name}>
            <th scope="row">{channel.name}</th>
            <td>{CHANNEL_TYPES[channel.type]?.label ?? channel.type}</td>
            <td class="wrap">
              <code>{where}</code>
              {secrets.length ? <span class="muted"> · {secrets.join(' · ')}</span> : null}
            </td>
            <td>
              <div class="actions">
                <button type="button" onClick={() => void test(channel.name)} disabled={state?.busy}>
                  {state?.busy ? 'Testing…' : 'Test'}
                  <span class="visually-hidden"> channel {channel.name}</span>
                </button>
                <span role="status" aria-live="polite" data-testid={`channel-test-${channel.name}`} class="test-outcome">
                  {state && !state.busy ? <TestOutcome state={state} /> : null}
                </span>
              </div>
            </td>
            <td class="actions">
              {locked ? (
                <span class="muted">in the config file</span>
              ) : (
                <>
                  <EditButton what="channel" name={channel.name} onClick={() => onEdit(channel)} />
                  <ConfirmButton label="Delete" title={`Delete the channel “${channel.name}”?`} confirmLabel="Delete channel" onConfirm={() => onDelete(channel)}>
                    <p>Notifications stop going to {channel.name} at once. A rule that names it must be changed first (the API says so).</p>
                  </ConfirmButton>
                </>
              )}
            </td>
          </tr>
        );
      })}
    </DataTable>
  );
}

function TestOutcome({ state }: { state: Exclude<TestState, { busy: true }> }) {
  if ('error' in state) {
    return (
      <span class="badge status-5xx" title={state.error.message}>
        test failed: {state.error.message}
        {state.error.status ? ` (${state.error.status})` : ''}
      </span>
    );
  }
  const { line } = state;
  if (line.outcome === 'delivered') {
    return (
      <span class="badge status-2xx">
        delivered{line.httpStatus ? ` · HTTP ${line.httpStatus}` : ''} · {ms(line.durationMs)}
      </span>
    );
  }
  return (
    <span class="badge status-5xx">
      {line.outcome}
      {line.httpStatus ? ` · HTTP ${line.httpStatus}` : ''}: {line.error ?? 'no answer'}
    </span>
  );
}

function RulesTable({ rules, locked, onEdit, onDelete }: { rules: AlertRuleView[]; locked: boolean; onEdit(rule: AlertRuleView): void; onDelete(rule: AlertRuleView): void }) {
  return (
    <DataTable labelledBy="rules-title" caption="Alert rules" columns={['Name', 'Kind', 'Condition', 'Severity', 'Channels', 'Actions']}>
      {rules.map((rule) => (
        <tr key={rule.name} data-rule={rule.name}>
          <th scope="row">{rule.name}</th>
          <td>{RULE_KINDS[rule.kind]?.label ?? rule.kind}</td>
          <td class="wrap" data-col="condition">
            {condition(rule)}
          </td>
          <td>
            <SeverityBadge severity={rule.severity} />
          </td>
          <td>{rule.channels?.length ? rule.channels.join(', ') : <span class="muted">all</span>}</td>
          <td class="actions">
            {locked ? (
              <span class="muted">in the config file</span>
            ) : (
              <>
                <EditButton what="rule" name={rule.name} onClick={() => onEdit(rule)} />
                <ConfirmButton label="Delete" title={`Delete the rule “${rule.name}”?`} confirmLabel="Delete rule" onConfirm={() => onDelete(rule)}>
                  <p>It stops watching at once; its open alerts are no longer followed.</p>
                </ConfirmButton>
              </>
            )}
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

const OUTCOME_CLASS: Record<string, string> = { delivered: 'status-2xx', retrying: 'status-4xx', failed: 'status-5xx' };

function DeliveryLog({ channels, rules }: { channels: string[]; rules: string[] }) {
  const [channel, setChannel] = useState('');
  const [rule, setRule] = useState('');
  const log = useApi((signal) => api.get<List<DeliveryLine>>('/alerts/deliveries', { limit: LOG_LIMIT, channel, rule }, signal), [channel, rule], ALERTS_POLL_MS);
  const lines = log.data?.data ?? [];
  return (
    <>
      <h2 id="deliveries-title">Delivery log</h2>
      <p class="muted">Every delivery attempt, newest first (the newest {LOG_LIMIT} shown).</p>
      <div class="filters" role="search" aria-label="Filter the delivery log">
        <FilterSelect label="Channel" value={channel} all="all channels" options={channels} onChange={setChannel} />
        <FilterSelect label="Rule" value={rule} all="all rules" options={[...rules, 'test']} optionLabel={(name) => (name === 'test' ? 'test deliveries' : name)} onChange={setRule} />
      </div>
      <ErrorNotice error={log.error} />
      <ListState ready={!!log.data} loading={log.loading} what="the delivery log" count={lines.length} empty={channel || rule ? 'No delivery matches the filter.' : 'No deliveries yet.'}>
        <DataTable labelledBy="deliveries-title" caption="Delivery log" columns={['Time', 'Outcome', 'Channel', 'Rule', 'Status', 'Attempt', 'HTTP', 'Duration', 'Error']}>
          {lines.map((line, index) => (
            <tr key={`${line.at}|${line.alertId}|${line.channel}|${line.attempt}|${index}`} data-delivery-channel={line.channel} data-delivery-rule={line.rule}>
              <td>
                <time dateTime={line.at}>{dateTime(line.at)}</time>
              </td>
              <td>
                <span class={`badge ${OUTCOME_CLASS[line.outcome] ?? ''}`}>{line.outcome}</span>
                {line.outcome === 'retrying' && line.nextAt ? <span class="muted"> next {dateTime(line.nextAt)}</span> : null}
              </td>
              <td>{line.channel}</td>
              <td>{line.rule}</td>
              <td>{line.status}</td>
              <td>{line.attempt}</td>
              <td>{line.httpStatus ?? '—'}</td>
              <td>{ms(line.durationMs)}</td>
              <td class="wrap">{line.error ?? ''}</td>
            </tr>
          ))}
        </DataTable>
      </ListState>
    </>
  );
}
