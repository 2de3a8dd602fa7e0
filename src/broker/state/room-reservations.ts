// Room a preemption keeps for the task it was made for (scheduler/plan.ts): from the stop until
// that task starts, no other work may take it. While the stopped attempt still runs, its own room
// covers the reservation, and the host holds only what the task needs beyond it; once it has
// ended, the host holds all the task needs. Kept in memory only: after a restart the task simply
// waits in the queue again.

export interface RoomReservation {
  jobId: string;
  taskIndex: number;
  host: string;
  /** What the task needs on the host. */
  cpus: number;
  memoryMb: number;
  /** The key of the attempt stopped to make the room (model/ids.ts keyOf). */
  stopped: string;
}

export interface HeldRoom {
  slots: number;
  memoryMb: number;
}

export class RoomReservations {
  readonly #byTask = new Map<string, RoomReservation>();

  get size(): number {
    return this.#byTask.size;
  }

  values(): IterableIterator<RoomReservation> {
    return this.#byTask.values();
  }

  get(jobId: string, taskIndex: number): RoomReservation | undefined {
    return this.#byTask.get(reservationKey(jobId, taskIndex));
  }

  add(reservation: RoomReservation): void {
    this.#byTask.set(reservationKey(reservation.jobId, reservation.taskIndex), reservation);
  }

  delete(jobId: string, taskIndex: number): boolean {
    return this.#byTask.delete(reservationKey(jobId, taskIndex));
  }

  /** A job that left memory keeps no room. */
  forgetJob(jobId: string): void {
    if (this.#byTask.size === 0) return;
    for (const reservation of [...this.#byTask.values()])
      if (reservation.jobId === jobId) this.delete(jobId, reservation.taskIndex);
  }
}

/**
 * What the host holds for a reservation now: what the task needs beyond the stopped attempt's
 * room while that attempt is live (`stopped`: what it uses, or null once it has ended).
 */
export function heldFor(reservation: RoomReservation, stopped: HeldRoom | null): HeldRoom {
  return {
    slots: Math.max(0, reservation.cpus - (stopped?.slots ?? 0)),
    memoryMb: Math.max(0, reservation.memoryMb - (stopped?.memoryMb ?? 0)),
  };
}

function reservationKey(jobId: string, taskIndex: number): string {
  return `${jobId}\u0000${taskIndex}`;
}
