// Secrets as the API shows them: a name and times, never a value (no route answers one).

import { z } from "zod";
import { SECRET_NAME } from "../model/secret-name.ts";
import { isoTime } from "./iso-time.ts";

export const secretNameParam = z
  .string()
  .regex(SECRET_NAME, "1 to 64 letters, digits, '_', '.' and '-'")
  .meta({ description: "the secret's name, as a job file's `credentials` names it" });

export const secretSchema = z
  .object({
    name: z.string(),
    createdAt: isoTime,
    updatedAt: isoTime.meta({ description: "when its value was last set" }),
  })
  .meta({ id: "Secret" });
export type SecretView = z.infer<typeof secretSchema>;
