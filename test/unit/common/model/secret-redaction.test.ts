// A text with the secret fields of the credentials used put out of sight; region and endpoint,
// which are not secret, left as they are.

import { describe, expect, it } from "vitest";
import { REDACTED, redactSecretValues } from "../../../../src/common/model/secret-redaction.ts";
import type { SecretValue } from "../../../../src/common/model/secret-value.ts";

describe("redactSecretValues", () => {
  const one: SecretValue = {
    accessKeyId: "AKIAONE",
    secretAccessKey: "sk/one+=",
    sessionToken: "tok-one",
    region: "eu-west-1",
    endpoint: "http://127.0.0.1:9000",
  };
  const two: SecretValue = { accessKeyId: "AKIATWO", secretAccessKey: "AKIATWO-and-more" };

  it.each<[string, string, readonly SecretValue[], string]>([
    ["no secrets", "HTTP 403 AKIAONE", [], "HTTP 403 AKIAONE"],
    [
      "every hidden field, each time it shows",
      "key AKIAONE secret sk/one+= token tok-one, AKIAONE again",
      [one],
      `key ${REDACTED} secret ${REDACTED} token ${REDACTED}, ${REDACTED} again`,
    ],
    [
      "region and endpoint kept",
      "http://127.0.0.1:9000 in eu-west-1",
      [one],
      "http://127.0.0.1:9000 in eu-west-1",
    ],
    [
      "a field holding another hidden whole, of several secrets",
      "AKIATWO-and-more / AKIATWO / AKIAONE",
      [one, two],
      `${REDACTED} / ${REDACTED} / ${REDACTED}`,
    ],
  ])("%s", (_, text, values, redacted) => {
    expect(redactSecretValues(text, values)).toBe(redacted);
  });
});
