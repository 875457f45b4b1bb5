/** A named, ordered list of stage names; the runner looks each name up in the stage registry. */
export interface PipelineDefinition {
  name: string;
  stages: string[];
}
