// A job's tasks without the whole job (for big arrays): one task with its attempts, and every
// task's state as one letter.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { errors } from "../../../../common/api/errors.ts";
import { taskSchema } from "../../../../common/api/jobs.ts";
import { json } from "../../../../common/api/json-answer.ts";
import { TASK_STATE_LETTERS, taskStatesSchema } from "../../../../common/api/task-states.ts";
import { jobParams, taskParams } from "../../requests.ts";
import { taskReadView } from "../../views.ts";
import type { JobRouteDeps } from "./deps.ts";

export function registerJobTaskRoutes(app: FastifyInstance, { ports }: JobRouteDeps): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get(
    "/api/v1/jobs/:id/tasks/:task",
    {
      schema: {
        summary: "One task with its attempts (without the whole job: for big arrays)",
        params: taskParams,
        response: { 200: json(taskSchema, "the task"), ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { id, task } = request.params;
      return taskReadView(await ports.read.readTask(id, task));
    },
  );

  api.get(
    "/api/v1/jobs/:id/task-states",
    {
      schema: {
        summary:
          "Every task's state as one letter, in index order: the compact form of a big array's tasks (100,000 tasks in 100 kB)",
        params: jobParams,
        response: { 200: json(taskStatesSchema, "the states"), ...errors(401, 404) },
      },
    },
    async (request) => {
      const states = await ports.read.readTaskStates(request.params.id);
      const letters = new Array<string>(states.length);
      for (let i = 0; i < states.length; i++) letters[i] = TASK_STATE_LETTERS[states[i]];
      return { count: states.length, states: letters.join(""), legend: TASK_STATE_LETTERS };
    },
  );
}
