// Reconnect back-off: doubles from BASE up to CAP, with full jitter so that many agents coming
// back after a server restart do not all knock at once.

export const RECONNECT_BASE_MS = 200;
export const RECONNECT_CAP_MS = 5000;

export function reconnectDelayMs(failures: number, random: number): number {
  const ceiling = Math.min(RECONNECT_CAP_MS, RECONNECT_BASE_MS * 2 ** Math.max(0, failures - 1));
  return Math.round(ceiling / 2 + (ceiling / 2) * random);
}
