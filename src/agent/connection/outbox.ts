// Reports waiting for the server's acknowledgement, in the order they were made. They are resent
// after every reconnect; the server applies each once (fencing by attempt) and acknowledges again.

import type { ReportEvent, ReportMessage } from "../../common/protocol/messages.ts";

export class Outbox {
  private readonly reports = new Map<number, ReportMessage>();
  private nextSeq = 1;

  add(event: ReportEvent): ReportMessage {
    const message: ReportMessage = { type: "report", seq: this.nextSeq++, event };
    this.reports.set(message.seq, message);
    return message;
  }

  /** Removes and returns the acknowledged report (undefined for a duplicate acknowledgement). */
  ack(seq: number): ReportMessage | undefined {
    const report = this.reports.get(seq);
    this.reports.delete(seq);
    return report;
  }

  /** Unacknowledged reports, oldest first. */
  all(): ReportMessage[] {
    return [...this.reports.values()];
  }

  get size(): number {
    return this.reports.size;
  }

  /** Forgets the reports of an attempt the server no longer wants to hear of. */
  dropAttempt(jobId: string, taskIndex: number, attempt: number): void {
    for (const [seq, report] of this.reports) {
      const event = report.event;
      if (event.kind === "leaving") continue;
      if (event.jobId === jobId && event.taskIndex === taskIndex && event.attempt === attempt) {
        this.reports.delete(seq);
      }
    }
  }
}
