// The flags `steward server` and `steward up` share, each an option the command adds where its
// help lists it (the two list their flags in orders of their own): `.addOption(brokerFlags.maxLogMb())`.

import { Option } from "commander";
import { DEFAULT_BODY_TIMEOUT_SECONDS } from "../broker/api/body-timeout.ts";
import { DEFAULT_ACCOUNTING_DAYS } from "../broker/server/core.ts";
import { DEFAULT_MAX_LOG_MB } from "../broker/server/log-limit.ts";
import { integer, number } from "../common/command-line/numbers.ts";

export const brokerFlags = {
  heartbeatSeconds: () =>
    new Option("--heartbeat-seconds <s>", "agent heartbeat interval")
      .argParser(number("--heartbeat-seconds"))
      .default(2),

  bodyTimeoutSeconds: () =>
    new Option(
      "--body-timeout-seconds <s>",
      "a request body that stops arriving this long (no byte) is answered 408 and its connection closed",
    )
      .argParser(number("--body-timeout-seconds"))
      .default(DEFAULT_BODY_TIMEOUT_SECONDS),

  maxLogMb: () =>
    new Option(
      "--max-log-mb <n>",
      "an attempt's stdout and stderr are kept up to N MB each; the rest is dropped, after a marker line (the job goes on)",
    )
      .argParser(integer("--max-log-mb", 1))
      .default(DEFAULT_MAX_LOG_MB),

  accountingDays: () =>
    new Option(
      "--accounting-days <n>",
      "removed jobs' ended attempts stay in steward acct this many days after their end (older ones are dropped hourly)",
    )
      .argParser(integer("--accounting-days", 1))
      .default(DEFAULT_ACCOUNTING_DAYS),

  metricsOpen: () =>
    new Option(
      "--metrics-open",
      "serve /metrics without a token (for a scraper that cannot send one); by default it takes an API token of any role",
    ),

  hostTimeoutSeconds: () =>
    new Option("--host-timeout-seconds <s>", "a host silent this long is lost")
      .argParser(number("--host-timeout-seconds"))
      .default(10),
};
