import type { FastifyInstance } from 'fastify';
import type { AdminDeps } from './admin-deps.js';
import { checkListedPlugins } from './plugin-names.js';
import { jsonObjectBody } from './request-body.js';
import { gatewayError } from '../../core/errors.js';
import { quoteInput } from '../../core/quote-input.js';
import { actorOf } from './admin-auth.js';
import { settingsOf } from './governance-audit.js';

interface IdParams {
  id: string;
}

/**
 * GET /api/teams lists every team and takes no parameter: one given (a filter or paging it does not have) is a 400,
 * as on the other listings, rather than ignored with every team answered.
 */
function noQueryParams(query: unknown): void {
  const names = query && typeof query === 'object' ? Object.keys(query) : [];
  const first = names[0];
  if (first === undefined) return;
  const shown = quoteInput(first, 60);
  throw gatewayError('invalid_query', `Unknown query parameter '${shown}': GET /api/teams takes none (it lists every team).`, { param: shown });
}

/** Teams: a budget and rate limits shared by their keys, on top of each key's own. */
export function registerTeamRoutes(api: FastifyInstance, deps: AdminDeps): void {
  const store = deps.governance;

  api.post('/teams', async (request, reply) => {
    const body = jsonObjectBody(request);
    checkListedPlugins(body, deps.configService.current());
    const team = await store.createTeam(body);
    await deps.configService.auditChange(actorOf(request, deps), 'team.created', `teams.${team.id}`, null, settingsOf(team));
    return reply.code(201).header('location', `/api/teams/${encodeURIComponent(team.id)}`).send(team);
  });

  api.get('/teams', async (request) => {
    noQueryParams(request.query);
    return { object: 'list', data: store.listTeams() };
  });

  api.get<{ Params: IdParams }>('/teams/:id', async (request) => store.getTeam(request.params.id));

  api.patch<{ Params: IdParams }>('/teams/:id', async (request) => {
    const body = jsonObjectBody(request);
    checkListedPlugins(body, deps.configService.current());
    // The team as this change found it, read with the change (as for keys).
    const { before: previous, after: updated } = await store.changeTeam(request.params.id, body);
    const before = previous.budget ?? null;
    await deps.configService.auditChange(actorOf(request, deps), 'team.updated', `teams.${updated.id}`, settingsOf(previous), settingsOf(updated));
    // A budget lowered below what was spent crosses its thresholds as a charge would (budget alerts).
    if ((updated.budget ?? null) !== before) deps.alerts.budgetChanged('team', updated.id, before);
    return updated;
  });

  // 409 team_in_use while keys still name the team.
  api.delete<{ Params: IdParams }>('/teams/:id', async (request, reply) => {
    const previous = await store.deleteTeam(request.params.id);
    await deps.configService.auditChange(actorOf(request, deps), 'team.deleted', `teams.${previous.id}`, settingsOf(previous), null);
    return reply.code(204).send();
  });
}
