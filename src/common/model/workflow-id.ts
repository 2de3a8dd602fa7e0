// A workflow's id: `flow-` and its number (its own sequence, apart from the jobs'). Apart from
// model/workflow.ts so that the CLI tells a workflow's id from a job's without loading the schema.

export const WORKFLOW_ID = /^flow-[1-9][0-9]*$/;

export function workflowId(number: number): string {
  return `flow-${number}`;
}

export function isWorkflowId(id: string): boolean {
  return WORKFLOW_ID.test(id);
}
