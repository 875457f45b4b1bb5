import type { FastifyInstance } from 'fastify';
import type { AlertsConfig } from '../../core/config.js';
import { gatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { maskDocument } from '../../config/present.js';
import { ALERT_NOTIFICATION_SCHEMA } from '../../telemetry/alerts/notification-schema.js';
import { actorOf } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { parsePageLimit } from './paging.js';
import { jsonObjectBody, queryString } from './request-body.js';

interface NameParams {
  name: string;
}

type Rule = NonNullable<AlertsConfig['rules']>[number];

/** The API's picture of alerts: the section in force with its secrets masked, and what the alerts are doing now. */
function alertsView(deps: AdminDeps): Record<string, unknown> {
  const { source, section } = deps.configService.alertsSection();
  const masked = maskDocument({ alerts: section }).alerts ?? {};
  return {
    source,
    channels: Object.entries(masked.channels ?? {}).map(([name, channel]) => ({ name, ...channel })),
    // As written, so what a client reads it can write back; the README gives the defaults.
    rules: masked.rules ?? [],
    max_queue: deps.configService.current().alerts.maxQueue,
    open: deps.alerts.open(),
    queued: deps.alerts.queued(),
  };
}

/** Drops the `name` the API adds when it shows a channel or rule, refusing one that disagrees with the URL. */
function withoutName(body: Record<string, unknown>, name: string, what: string): Record<string, unknown> {
  if (body.name !== undefined && body.name !== name) throw gatewayError('invalid_config', `The body names ${what} '${String(body.name)}' but the URL names '${name}'.`, { param: 'name' });
  const { name: _name, ...rest } = body;
  return rest;
}

/**
 * The channels of a `PUT /api/alerts` given as the GET view lists them, by name. Every item must be an object with
 * a name of its own: an item without one was filed under the name "undefined", a second of the same name silently
 * replaced the first, and an item that was not an object was dropped, all with a 200.
 */
function namedChannels(channels: unknown[]): Record<string, Record<string, unknown>> {
  const named: Record<string, Record<string, unknown>> = {};
  channels.forEach((channel, index) => {
    if (!isRecord(channel)) throw gatewayError('invalid_config', `alerts.channels.${index}: expected a channel object with its name.`, { param: `alerts.channels.${index}` });
    const { name } = channel;
    if (typeof name !== 'string' || name === '') throw gatewayError('invalid_config', `alerts.channels.${index}.name: a channel in a list needs its name (a non-empty string).`, { param: `alerts.channels.${index}.name` });
    if (Object.hasOwn(named, name)) throw gatewayError('invalid_config', `alerts.channels.${index}.name: the channel '${name}' is listed twice.`, { param: `alerts.channels.${index}.name` });
    named[name] = withoutName(channel, name, 'channel');
  });
  return named;
}

/**
 * `/api/alerts`: the alerts section (channels with secrets masked, rules), the open alerts, the delivery log, a
 * test delivery per channel, and the notification's JSON Schema. Writes go to the API layer like every other
 * config change (versioned, audited, applied at once); the API's section replaces the file's as a whole.
 */
export function registerAlertRoutes(api: FastifyInstance, deps: AdminDeps): void {
  const service = deps.configService;

  api.get('/alerts', async () => alertsView(deps));

  api.put('/alerts', async (request) => {
    // What the GET view adds (source, open alerts, the queue) is read-only; anything else the schema checks, so an
    // unknown field is refused rather than dropped.
    const { channels, source: _source, open: _open, queued: _queued, ...rest } = jsonObjectBody(request);
    // Channels may come as the GET view lists them (an array of named channels) or as the config file has them.
    const named = Array.isArray(channels) ? namedChannels(channels) : channels;
    const section = { ...rest, ...(named !== undefined ? { channels: named } : {}) } as AlertsConfig;
    await service.changeAlerts(actorOf(request, deps), 'alerts.replaced', 'alerts', () => section, { whole: true });
    return alertsView(deps);
  });

  // Back to the file's section (or none).
  api.delete('/alerts', async (request) => {
    await service.changeAlerts(actorOf(request, deps), 'alerts.deleted', 'alerts', () => null, { whole: true });
    return alertsView(deps);
  });

  api.get('/alerts/schema', async (_request, reply) => reply.type('application/schema+json; charset=utf-8').send(JSON.stringify(ALERT_NOTIFICATION_SCHEMA)));

  api.get('/alerts/open', async () => ({ object: 'list', data: deps.alerts.open() }));

  api.get('/alerts/deliveries', async (request) => {
    const limit = parsePageLimit(queryString(request, 'limit'), 1_000);
    const channel = queryString(request, 'channel');
    const rule = queryString(request, 'rule');
    // Filters read past the page so a filtered page is still full; the log keeps at most 10,000 lines.
    const all = deps.alerts.deliveries(channel || rule ? 10_000 : limit);
    const data = all.filter((line) => (!channel || line.channel === channel) && (!rule || line.rule === rule)).slice(0, limit);
    return { object: 'list', data };
  });

  // ---- channels ----

  api.get('/alerts/channels', async () => ({ object: 'list', data: alertsView(deps).channels }));

  api.get<{ Params: NameParams }>('/alerts/channels/:name', async (request) => {
    const found = (alertsView(deps).channels as Array<{ name: string }>).find((channel) => channel.name === request.params.name);
    if (!found) throw channelNotFound(request.params.name);
    return found;
  });

  api.put<{ Params: NameParams }>('/alerts/channels/:name', async (request, reply) => {
    const { name } = request.params;
    const channel = withoutName(jsonObjectBody(request), name, 'channel');
    if (reservedName(name)) throw gatewayError('invalid_config', `Invalid configuration: alerts.channels.${name}: this name is reserved (every JavaScript object has a property of that name); choose another`, { param: `alerts.channels.${name}` });
    const created = !hasChannel(service.alertsSection().section, name);
    await service.changeAlerts(actorOf(request, deps), created ? 'alert_channel.created' : 'alert_channel.replaced', `alerts.channels.${name}`, (section) => ({
      ...section,
      channels: { ...section.channels, [name]: channel as never },
    }));
    if (created) reply.code(201).header('location', `/api/alerts/channels/${encodeURIComponent(name)}`);
    return (alertsView(deps).channels as Array<{ name: string }>).find((item) => item.name === name);
  });

  api.delete<{ Params: NameParams }>('/alerts/channels/:name', async (request, reply) => {
    const { name } = request.params;
    if (!hasChannel(service.alertsSection().section, name)) throw channelNotFound(name);
    await service.changeAlerts(actorOf(request, deps), 'alert_channel.deleted', `alerts.channels.${name}`, (section) => {
      const channels = { ...section.channels };
      delete channels[name];
      return { ...section, channels };
    });
    return reply.code(204).send();
  });

  // One delivery attempt now, recorded in the delivery log; the answer says how it went.
  api.post<{ Params: NameParams }>('/alerts/channels/:name/test', async (request) => {
    const { name } = request.params;
    if (!service.current().alerts.channels.has(name)) throw channelNotFound(name);
    return deps.alerts.testChannel(name);
  });

  // ---- rules ----

  api.get('/alerts/rules', async () => ({ object: 'list', data: alertsView(deps).rules }));

  api.get<{ Params: NameParams }>('/alerts/rules/:name', async (request) => {
    const found = (alertsView(deps).rules as Array<{ name: string }>).find((rule) => rule.name === request.params.name);
    if (!found) throw ruleNotFound(request.params.name);
    return found;
  });

  // A new rule goes last; a rule replaced keeps its place.
  api.put<{ Params: NameParams }>('/alerts/rules/:name', async (request, reply) => {
    const { name } = request.params;
    // A body naming another rule is refused, as for channels (it was stored under the URL's name without a word).
    const rule = { ...withoutName(jsonObjectBody(request), name, 'rule'), name } as Rule;
    const created = !(service.alertsSection().section.rules ?? []).some((item) => item.name === name);
    await service.changeAlerts(actorOf(request, deps), created ? 'alert_rule.created' : 'alert_rule.replaced', `alerts.rules.${name}`, (section) => {
      const rules = [...(section.rules ?? [])];
      const at = rules.findIndex((item) => item.name === name);
      if (at === -1) rules.push(rule);
      else rules[at] = rule;
      return { ...section, rules };
    });
    if (created) reply.code(201).header('location', `/api/alerts/rules/${encodeURIComponent(name)}`);
    return (alertsView(deps).rules as Array<{ name: string }>).find((item) => item.name === name);
  });

  api.delete<{ Params: NameParams }>('/alerts/rules/:name', async (request, reply) => {
    const { name } = request.params;
    if (!(service.alertsSection().section.rules ?? []).some((item) => item.name === name)) throw ruleNotFound(name);
    await service.changeAlerts(actorOf(request, deps), 'alert_rule.deleted', `alerts.rules.${name}`, (section) => ({
      ...section,
      rules: (section.rules ?? []).filter((item) => item.name !== name),
    }));
    return reply.code(204).send();
  });
}

/**
 * Whether the section in force has a channel of this name, its own: a lookup by index found Object's members, so a
 * DELETE of `toString` answered 204 (and copied the file's section into the API layer, where it stops following the
 * file) for a channel that never was.
 */
function hasChannel(section: AlertsConfig, name: string): boolean {
  return section.channels !== undefined && Object.hasOwn(section.channels, name);
}

/**
 * A channel name the config cannot hold: the schema refuses Object's member names, but a `__proto__` key is dropped
 * before it is checked, so the PUT answered 200 with nothing stored.
 */
function reservedName(name: string): boolean {
  return name in Object.prototype || name === 'prototype';
}

function channelNotFound(name: string) {
  return gatewayError('alert_channel_not_found', `No alert channel named '${name}'.`, { param: 'name' });
}

function ruleNotFound(name: string) {
  return gatewayError('alert_rule_not_found', `No alert rule named '${name}'.`, { param: 'name' });
}
