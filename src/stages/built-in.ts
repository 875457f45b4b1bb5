/**
 * The built-in stages by name, each imported only when a pipeline names it. The imports are written out, not
 * computed from the name, so that a bundler (the compiled build and the single binary, scripts/build.ts) sees
 * every stage and carries it along; adding a stage is its file, its line here and its name in a pipeline.
 */
export const BUILT_IN_STAGES: Readonly<Record<string, () => Promise<{ default?: unknown }>>> = {
  auth: () => import('./auth.js'),
  'rate-limit': () => import('./rate-limit.js'),
  route: () => import('./route.js'),
  mcp: () => import('./mcp.js'),
  guardrails: () => import('./guardrails.js'),
  cache: () => import('./cache.js'),
  spend: () => import('./spend.js'),
  call: () => import('./call.js'),
};
