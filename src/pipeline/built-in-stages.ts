/**
 * The built-in stages by name, each imported only when a pipeline names it. The imports are written out, not
 * computed from the name, so that a bundler (the compiled build and the single binary, scripts/build.ts) sees
 * every stage and carries it along; adding a stage is its file, its line here and its name in a pipeline.
 */
export const BUILT_IN_STAGES: Readonly<Record<string, () => Promise<{ default?: unknown }>>> = {
  auth: () => import('../stages/auth.js'),
  'rate-limit': () => import('../stages/rate-limit.js'),
  route: () => import('../stages/route.js'),
  mcp: () => import('../stages/mcp.js'),
  guardrails: () => import('../stages/guardrails.js'),
  cache: () => import('../stages/cache.js'),
  spend: () => import('../stages/spend.js'),
  call: () => import('../stages/call.js'),
};
