// Reconnect back-off: doubles from BASE up to CAP, with jitter over the upper half so that many
// agents coming back after a server restart do not all knock at once. The cap stays below the
// host timeout, so that agents re-attach to a restarted server before their hosts count as lost.

export const RECONNECT_BASE_MS = 100;
export const RECONNECT_CAP_MS = 1500;

export function reconnectDelayMs(failures: number, random: number): number {
  const ceiling = Math.min(RECONNECT_CAP_MS, RECONNECT_BASE_MS * 2 ** Math.max(0, failures - 1));
  return Math.round(ceiling / 2 + (ceiling / 2) * random);
}
