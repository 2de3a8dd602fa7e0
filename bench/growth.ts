// The growth of a figure sampled over time: the slope of its least-squares line, per hour. A soak
// prints it for every series (memory, descriptors, store size, event-loop lag): a figure that
// levels off has a slope that shrinks as the run gets longer; one that grows without bound keeps it.

export interface Sample {
  /** Seconds since the soak's start. */
  atSeconds: number;
  value: number;
}

/** Units a second of the least-squares line through the samples, times 3600; null under two distinct times. */
export function growthPerHour(samples: readonly Sample[]): number | null {
  const points = samples.filter(
    (sample) => Number.isFinite(sample.value) && Number.isFinite(sample.atSeconds),
  );
  if (points.length < 2) return null;
  const meanT = points.reduce((sum, p) => sum + p.atSeconds, 0) / points.length;
  const meanV = points.reduce((sum, p) => sum + p.value, 0) / points.length;
  let covariance = 0;
  let variance = 0;
  for (const p of points) {
    covariance += (p.atSeconds - meanT) * (p.value - meanV);
    variance += (p.atSeconds - meanT) ** 2;
  }
  if (variance === 0) return null;
  return (covariance / variance) * 3600;
}

/**
 * The growth between the first and the last third of the samples: the mean of the last third over
 * the mean of the first (1: flat). Less moved by one spike than the slope, and scale-free; null
 * with fewer than three samples or a first third of zero.
 */
export function lastOverFirstThird(samples: readonly Sample[]): number | null {
  const values = samples.map((sample) => sample.value).filter(Number.isFinite);
  if (values.length < 3) return null;
  const third = Math.floor(values.length / 3);
  const mean = (part: number[]) => part.reduce((sum, value) => sum + value, 0) / part.length;
  const first = mean(values.slice(0, third));
  if (first === 0) return null;
  return mean(values.slice(values.length - third)) / first;
}
