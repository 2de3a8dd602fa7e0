// Which failures of a store call are the store's unavailability (answered 503, waited out), and
// the one line each is told with; every other failure is not (it keeps its 500).

import { describe, expect, it } from "vitest";
import {
  StoreUnavailableError,
  storeUnavailableReason,
} from "../../../../src/broker/store/store-unavailable.ts";

/** An error with a `code`, as Node's network errors and pg's DatabaseError carry one. */
function coded(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

describe("storeUnavailableReason", () => {
  it("tells the store's unavailability, in one line", () => {
    const cases: [string, Error, string][] = [
      ["a connection reset", coded("read ECONNRESET", "ECONNRESET"), "read ECONNRESET"],
      [
        "a connection refused",
        coded("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED"),
        "connect ECONNREFUSED 127.0.0.1:5432",
      ],
      ["a write to a closed socket", coded("write EPIPE", "EPIPE"), "write EPIPE"],
      [
        "a name that does not resolve",
        coded("getaddrinfo ENOTFOUND db", "ENOTFOUND"),
        "getaddrinfo ENOTFOUND db",
      ],
      ["a network error without a message", coded("", "EHOSTUNREACH"), "EHOSTUNREACH"],
      [
        "the server shutting down",
        coded("terminating connection due to administrator command", "57P01"),
        "terminating connection due to administrator command (SQLSTATE 57P01)",
      ],
      [
        "the server starting",
        coded("the database system is starting up", "57P03"),
        "the database system is starting up (SQLSTATE 57P03)",
      ],
      [
        "a connection exception (class 08)",
        coded("connection failure", "08006"),
        "connection failure (SQLSTATE 08006)",
      ],
      [
        "no connection slot",
        coded("sorry, too many clients already", "53300"),
        "sorry, too many clients already (SQLSTATE 53300)",
      ],
      [
        "a statement timeout",
        coded("canceling statement due to statement timeout", "57014"),
        "canceling statement due to statement timeout (SQLSTATE 57014)",
      ],
      ["pg's read timeout (a stall)", new Error("Query read timeout"), "no answer in time (stalled?)"],
      [
        "pg-pool's connect timeout",
        new Error("timeout exceeded when trying to connect"),
        "no connection within 3 s (stalled?)",
      ],
      [
        "pg-pool's timeout of a new connection",
        new Error("Connection terminated due to connection timeout", { cause: new Error("timeout expired") }),
        "no connection within 3 s (stalled?)",
      ],
      [
        "a connection lost",
        new Error("Connection terminated unexpectedly"),
        "Connection terminated unexpectedly",
      ],
      [
        "a client broken before",
        new Error("Client has encountered a connection error and is not queryable"),
        "Client has encountered a connection error and is not queryable",
      ],
      ["the error as the API is handed it", new StoreUnavailableError("read ECONNRESET"), "read ECONNRESET"],
      [
        "wrapped in a cause",
        new Error("cannot open the PostgreSQL store", { cause: coded("read ECONNRESET", "ECONNRESET") }),
        "read ECONNRESET",
      ],
      [
        "the first of several addresses",
        new AggregateError([coded("connect ECONNREFUSED ::1:5432", "ECONNREFUSED")], ""),
        "connect ECONNREFUSED ::1:5432",
      ],
      ["a message on several lines", coded("read\n  ECONNRESET", "ECONNRESET"), "read ECONNRESET"],
    ];
    for (const [what, error, reason] of cases) expect(storeUnavailableReason(error), what).toBe(reason);
  });

  it("leaves every other failure alone", () => {
    const cases: [string, unknown][] = [
      ["a constraint", coded('duplicate key value violates unique constraint "jobs_pkey"', "23505")],
      ["a syntax error (a bug)", coded('syntax error at or near "SELEC"', "42601")],
      ["a serialization failure", coded("could not serialize access", "40001")],
      ["a plain error", new Error("boom")],
      ["a file error", coded("ENOENT: no such file", "ENOENT")],
      ["not an error", "read ECONNRESET"],
      ["nothing", undefined],
    ];
    for (const [what, error] of cases) expect(storeUnavailableReason(error), what).toBeNull();
  });
});
