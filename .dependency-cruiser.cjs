/**
 * The layering of src/ (README "Architecture"), checked by `npm run lint` with dependency-cruiser. Arrows point
 * down, never up:
 *
 *   main, gateway, index -> http (with each dialect's routes/) -> dialects -> pipeline -> stages -> mcp -> cache -> governance
 *     -> routing -> config -> providers -> catalog, tokens, wire -> core
 *
 * with shared leaves any layer may use: core/, bus/, guardrails/ (the detection library), network/ (the outbound
 * dispatcher: proxy and CAs), log.ts and the small helpers at src/*.ts. telemetry/ holds
 * bus subscribers, wired by the gateway; only the gateway imports them.
 */
/** Each layer as a path pattern, top first. A dialect's `routes/` folder is its part of the HTTP layer. */
const LAYERS = [
  { name: 'http', path: '^src/(http/|dialects/[^/]+/routes/)' },
  { name: 'dialects', path: '^src/dialects/(?![^/]+/routes/)' },
  { name: 'pipeline', path: '^src/pipeline/' },
  { name: 'stages', path: '^src/stages/' },
  { name: 'mcp', path: '^src/mcp/' },
  { name: 'cache', path: '^src/cache/' },
  { name: 'governance', path: '^src/governance/' },
  { name: 'routing', path: '^src/routing/' },
  { name: 'config', path: '^src/config/' },
  { name: 'providers', path: '^src/providers/' },
];

/** One rule per layer: it may not import any layer above it (nor the bus subscribers in telemetry/). */
const layerRules = LAYERS.slice(1).map((layer, index) => ({
  name: `${layer.name}-never-imports-upward`,
  severity: 'error',
  comment: `${layer.name} sits below ${LAYERS.slice(0, index + 1).map((above) => above.name).join(', ')}: arrows point down.`,
  from: { path: layer.path },
  to: { path: [...LAYERS.slice(0, index + 1).map((above) => above.path), '^src/telemetry/'] },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'leaves-import-only-leaves',
      severity: 'error',
      comment: 'catalog/, tokens/, bus/ and guardrails/ are shared leaves: they import only core (and each other).',
      from: { path: '^src/(catalog|tokens|bus|guardrails)/' },
      to: { path: '^src/', pathNot: '^src/(core|catalog|tokens|bus|guardrails)/|^src/[^/]+\\.ts$' },
    },
    {
      name: 'network-imports-only-core',
      severity: 'error',
      comment: 'network/ (the outbound dispatcher every client calls through) is a shared leaf: it imports only core.',
      from: { path: '^src/network/' },
      to: { path: '^src/', pathNot: '^src/(core|network)/' },
    },
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'An import cycle couples folders that must stay separable (and breaks ESM initialisation order).',
      from: { path: '^src/' },
      to: { circular: true, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'core-imports-nothing',
      severity: 'error',
      comment: 'src/core/ is the shared vocabulary: it imports nothing else of the project.',
      from: { path: '^src/core/' },
      to: { path: '^src/', pathNot: '^src/core/' },
    },
    {
      name: 'wire-imports-only-core',
      severity: 'error',
      comment: 'A wire format (src/wire/<format>/) is shared by its dialect and its provider adapter, so it depends on neither.',
      from: { path: '^src/wire/' },
      to: { path: '^src/', pathNot: '^src/(core|wire)/' },
    },
    {
      name: 'dialects-never-import-providers',
      severity: 'error',
      comment: 'A client format translates to and from the canonical shapes; the provider adapters are the other side of the pipeline.',
      from: { path: '^src/dialects/(?![^/]+/routes/)' },
      to: { path: '^src/(providers|stages)/' },
    },
    {
      name: 'governance-and-routing-never-import-dialects',
      severity: 'error',
      comment: 'Keys, budgets, limits and routing work on the canonical request, whatever format it came in.',
      from: { path: '^src/(governance|routing)/' },
      to: { path: '^src/(dialects|wire|http|stages|pipeline)/' },
    },
    {
      name: 'below-http-never-import-http',
      severity: 'error',
      comment: 'Stages, adapters, the pipeline and everything under them run the same for every dialect and in process.',
      from: { path: '^src/(core|wire|stages|providers|pipeline|governance|routing|catalog|bus|telemetry|store)/' },
      to: { path: '^src/http/' },
    },
    {
      name: 'providers-never-import-the-pipeline',
      severity: 'error',
      comment: 'Provider adapters are pure transforms between the canonical shapes and one wire format.',
      from: { path: '^src/providers/' },
      to: { path: '^src/(stages|pipeline|dialects|telemetry)/' },
    },
    {
      name: 'no-stage-imports-another-stage',
      severity: 'error',
      comment: 'Stages meet only through the context and the services; shared logic lives in governance/, routing/ or catalog/.',
      from: { path: '^src/stages/([^/]+)\\.ts$' },
      to: { path: '^src/stages/', pathNot: '^src/stages/$1\\.ts$' },
    },
    {
      name: 'subscribers-never-import-stages',
      severity: 'error',
      comment: 'Telemetry is a bus subscriber: no stage calls it, and it calls no stage.',
      from: { path: '^src/telemetry/' },
      to: { path: '^src/(stages|pipeline|http|dialects)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
