/**
 * The JSON Schema of a notification as the generic webhook channel sends it (and as every other channel is given
 * it before formatting). This is an interface: subscribers validate against it, the README publishes it, and a
 * test checks both that the README's copy is this one and that every delivery in the tests validates.
 */
export const ALERT_NOTIFICATION_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://tollgate.dev/schemas/alert-notification.v1.json',
  title: 'tollgate alert notification',
  type: 'object',
  required: ['id', 'rule', 'event', 'severity', 'status', 'summary', 'subject', 'details', 'at'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', description: "The alert's id: its firing and its resolved notification carry the same one." },
    rule: { type: 'string', description: "The rule's name (`test` for a test notification)." },
    event: {
      type: 'string',
      description: 'The gateway event the rule watches.',
      enum: ['budget.threshold', 'breaker.opened', 'breaker.closed', 'provider.attempted', 'request.completed', 'request.failed', 'test'],
    },
    severity: { enum: ['info', 'warning', 'critical'] },
    status: { enum: ['firing', 'resolved'] },
    summary: { type: 'string', description: 'One line for people.' },
    subject: {
      type: 'object',
      description: 'What the alert is about.',
      additionalProperties: false,
      properties: {
        key: { type: 'string', description: 'A virtual key id (budget rules).' },
        team: { type: 'string', description: 'A team id (budget rules).' },
        provider: { type: 'string' },
        model: { type: 'string' },
        target: { type: 'string', description: '`<provider>/<model>#<key id>`, for a breaker.' },
        route: { type: 'string', description: 'A route, or the model a request named when it named no route.' },
      },
    },
    details: { type: 'object', description: "The rule's figures (spend and budget, rates, p95, window); a resolved notification adds `firedAt`." },
    at: { type: 'string', format: 'date-time', description: 'When the condition began (firing) or ended (resolved).' },
  },
} as const;
