import type { AlertNotification } from '../rules.js';
import { oneLine, subjectLabel, truncate } from './common.js';

/**
 * PagerDuty Events API v2. A firing alert is a `trigger` whose `dedup_key` is the alert's id; its resolution is a
 * `resolve` with the same key (and only the routing key, the action and the key, as the API takes it), so the
 * incident PagerDuty opened closes. Limits: `summary` 1024 characters, `source` and `dedup_key` 255.
 */
export type PagerDutyEvent =
  | {
      routing_key: string;
      event_action: 'trigger';
      dedup_key: string;
      client: string;
      payload: {
        summary: string;
        source: string;
        severity: 'critical' | 'error' | 'warning' | 'info';
        timestamp: string;
        component?: string;
        group: string;
        class: string;
        custom_details: Record<string, unknown>;
      };
    }
  | { routing_key: string; event_action: 'resolve'; dedup_key: string };

/** Our severities in PagerDuty's (which also has `error`, between warning and critical; unused). */
const SEVERITY: Record<AlertNotification['severity'], 'critical' | 'warning' | 'info'> = { critical: 'critical', warning: 'warning', info: 'info' };

export function pagerDutyEvent(notification: AlertNotification, channel: { routingKey: string; source: string }): PagerDutyEvent {
  const dedupKey = truncate(notification.id, 255);
  if (notification.status === 'resolved') return { routing_key: channel.routingKey, event_action: 'resolve', dedup_key: dedupKey };
  const component = subjectLabel(notification);
  return {
    routing_key: channel.routingKey,
    event_action: 'trigger',
    dedup_key: dedupKey,
    client: 'tollgate',
    payload: {
      summary: truncate(oneLine(notification.summary) || notification.rule, 1_024),
      source: truncate(channel.source, 255),
      severity: SEVERITY[notification.severity],
      timestamp: notification.at,
      ...(component ? { component: truncate(component, 255) } : {}),
      group: truncate(notification.rule, 255),
      class: truncate(notification.event, 255),
      custom_details: { rule: notification.rule, event: notification.event, subject: notification.subject, ...notification.details },
    },
  };
}
