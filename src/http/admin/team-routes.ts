import type { FastifyInstance } from 'fastify';
import type { AdminDeps } from './admin-deps.js';
import { checkListedPlugins } from './plugin-names.js';
import { checkMcpServerNames } from './mcp-server-names.js';
import { checkMcpAllowNames } from './allow-list-names.js';
import { checkTeamMcpServers } from './mcp-allow-ceiling.js';
import { jsonObjectBody, onlyQueryParams } from './request-body.js';
import { actorOf } from './admin-auth.js';
import { settingsOf } from './governance-audit.js';

interface IdParams {
  id: string;
}

/** GET /api/teams lists every team: a query parameter (a filter or paging it does not have) is a 400, not ignored. */
const NO_PARAMS: ReadonlySet<string> = new Set();

/** Teams: a budget and rate limits shared by their keys, on top of each key's own. */
export function registerTeamRoutes(api: FastifyInstance, deps: AdminDeps): void {
  const store = deps.governance;

  api.post('/teams', async (request, reply) => {
    const body = jsonObjectBody(request);
    checkListedPlugins(body, deps.configService.current());
    checkMcpServerNames(body, deps.configService.current());
    checkMcpAllowNames(body, deps.configService.current());
    checkTeamMcpServers(body);
    const team = await store.createTeam(body);
    await deps.configService.auditChange(actorOf(request, deps), 'team.created', `teams.${team.id}`, null, settingsOf(team));
    return reply.code(201).header('location', `/api/teams/${encodeURIComponent(team.id)}`).send(team);
  });

  api.get('/teams', async (request) => {
    onlyQueryParams(request, NO_PARAMS);
    return { object: 'list', data: store.listTeams() };
  });

  api.get<{ Params: IdParams }>('/teams/:id', async (request) => store.getTeam(request.params.id));

  api.patch<{ Params: IdParams }>('/teams/:id', async (request) => {
    const body = jsonObjectBody(request);
    checkListedPlugins(body, deps.configService.current());
    checkMcpServerNames(body, deps.configService.current());
    checkMcpAllowNames(body, deps.configService.current());
    checkTeamMcpServers(body);
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
