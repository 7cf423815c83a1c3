// Fixed-window counters for the rate limiter and the token endpoint's guard: in process memory by default,
// in Redis when REDIS_URL is set so that several API processes share one budget. A window starts with the
// first hit on a key and lasts windowMs; the count and the time left are read in the same step.
import { Redis } from 'ioredis';
import type { Clock } from '../clock.js';

export interface Count {
  count: number;
  /** Milliseconds until the window of this key ends. */
  resetMs: number;
}

export interface CounterStore {
  /** Adds one to the key's counter and returns the new count. Synchronous in memory, so the hot path stays cheap. */
  hit(key: string, windowMs: number): Count | Promise<Count>;
  /** Reads the key's counter without changing it (count 0 when there is none). */
  peek(key: string): Count | Promise<Count>;
  close(): Promise<void>;
}

export class MemoryCounterStore implements CounterStore {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private hitsSinceSweep = 0;

  constructor(private readonly clock: Clock) {}

  hit(key: string, windowMs: number): Count {
    const now = this.clock.now().getTime();
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      if (++this.hitsSinceSweep >= 1000) this.sweep(now);
      w = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, w);
    }
    w.count++;
    return { count: w.count, resetMs: w.resetAt - now };
  }

  peek(key: string): Count {
    const now = this.clock.now().getTime();
    const w = this.windows.get(key);
    return w && w.resetAt > now ? { count: w.count, resetMs: w.resetAt - now } : { count: 0, resetMs: 0 };
  }

  /** Drops ended windows now and then, so keys of clients that went away do not pile up. */
  private sweep(now: number): void {
    this.hitsSinceSweep = 0;
    if (this.windows.size < 10_000) return;
    for (const [key, w] of this.windows) if (w.resetAt <= now) this.windows.delete(key);
  }

  async close(): Promise<void> {
    this.windows.clear();
  }
}

// INCR and the expiry in one atomic step: the first hit of a window sets its expiry, and a key that somehow has
// none gets one, so a counter can never live forever.
const HIT_SCRIPT = `
local c = redis.call('INCR', KEYS[1])
local t = redis.call('PTTL', KEYS[1])
if t < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  t = tonumber(ARGV[1])
end
return {c, t}`;

const PEEK_SCRIPT = `
local c = redis.call('GET', KEYS[1])
local t = redis.call('PTTL', KEYS[1])
if not c or t < 0 then return {0, 0} end
return {tonumber(c), t}`;

type ScriptedRedis = Redis & {
  rlHit(key: string, windowMs: number): Promise<[number, number]>;
  rlPeek(key: string): Promise<[number, number]>;
};

export class RedisCounterStore implements CounterStore {
  private readonly redis: ScriptedRedis;

  constructor(url: string, onError: (err: Error) => void) {
    const redis = new Redis(url, {
      // Fail fast rather than queue: a request must not wait on a Redis that is gone (the caller fails open).
      maxRetriesPerRequest: 1,
      commandTimeout: 1000,
      connectTimeout: 2000,
    });
    redis.on('error', onError);
    redis.defineCommand('rlHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    redis.defineCommand('rlPeek', { numberOfKeys: 1, lua: PEEK_SCRIPT });
    this.redis = redis as ScriptedRedis;
  }

  async hit(key: string, windowMs: number): Promise<Count> {
    const [count, resetMs] = await this.redis.rlHit(key, windowMs);
    return { count, resetMs };
  }

  async peek(key: string): Promise<Count> {
    const [count, resetMs] = await this.redis.rlPeek(key);
    return { count, resetMs };
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
