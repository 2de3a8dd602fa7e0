// The API's times: ISO 8601 in UTC, as every answer writes them.

import { z } from "zod";

export const isoTime = z.iso.datetime();
