// One clock for the whole service, injectable so that tests can move time (certificate expiry,
// webhook retries, token lifetimes).
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock for tests: starts at the given time (or now) and only moves when told to. */
export class ManualClock implements Clock {
  private ms: number;
  constructor(start: Date | number = Date.now()) {
    this.ms = typeof start === 'number' ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(to: Date | number): void {
    this.ms = typeof to === 'number' ? to : to.getTime();
  }
}

/** Timestamps are stored and shown as RFC 3339 UTC strings with milliseconds; they sort as text. */
export function iso(d: Date): string {
  return d.toISOString();
}
