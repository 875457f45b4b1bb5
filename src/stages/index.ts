import type { StageRegistry } from '../pipeline/runner.js';
import type { StageFactory } from '../pipeline/stage.js';
import { callStage } from './call.js';

const builtInStages: StageFactory[] = [callStage];

/** Built-in stages by name; pipeline definitions refer to these names. */
export const builtInStageRegistry: StageRegistry = new Map(builtInStages.map((factory) => [factory.name, factory]));
