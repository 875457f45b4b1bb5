import type { PipelineDefinition } from '../src/pipeline/definition.js';

/**
 * The default pipeline: stage names in request order (responses flow back in reverse). Adding a stage is a
 * file in src/stages/ (`src/stages/<name>.ts`, default-exporting its StageFactory), its line in
 * src/pipeline/built-in-stages.ts and its name here.
 */
const defaultPipeline: PipelineDefinition = {
  name: 'default',
  stages: ['auth', 'rate-limit', 'route', 'mcp', 'guardrails', 'cache', 'spend', 'call'],
};

export default defaultPipeline;
