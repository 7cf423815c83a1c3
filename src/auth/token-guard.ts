// The token endpoint's guard against secret guessing (§2): failed client authentications are counted per
// presented client id and per client address within a window; once either count reaches its limit, further token
// requests for that id (or from that address) are answered 429 with Retry-After until the window ends, without
// even checking the secret. Successes do not count. The check and the count are keyed on the *presented* id, so an
// unknown client id, a wrong secret and a suspended application are treated exactly alike.
import { createHash } from 'node:crypto';
import type { Config } from '../config.js';
import { AppError } from '../http/errors.js';
import type { Count, CounterStore } from '../http/counters.js';

export class TokenGuard {
  constructor(
    private readonly store: CounterStore,
    private readonly config: Pick<Config, 'tokenGuardFailuresPerClient' | 'tokenGuardFailuresPerAddress' | 'tokenGuardWindowMs' | 'redisKeyPrefix'>,
    private readonly onStoreError: (err: Error) => void,
  ) {}

  private keys(clientId: string | undefined, address: string): Array<[string, number]> {
    const keys: Array<[string, number]> = [[`${this.config.redisKeyPrefix}tg:addr:${address}`, this.config.tokenGuardFailuresPerAddress]];
    if (clientId) {
      // Hashed so that an attacker's arbitrary (long) client ids cannot make keys of arbitrary size.
      const id = createHash('sha256').update(clientId).digest('base64url').slice(0, 22);
      keys.push([`${this.config.redisKeyPrefix}tg:client:${id}`, this.config.tokenGuardFailuresPerClient]);
    }
    return keys;
  }

  /** Throws 429 rate_limited when the client id or the address has failed too often in the current window. */
  async check(clientId: string | undefined, address: string): Promise<void> {
    let retryMs = 0;
    for (const [key, limit] of this.keys(clientId, address)) {
      let c: Count;
      try {
        c = await this.store.peek(key);
      } catch (err) {
        this.onStoreError(err as Error);
        continue;
      }
      if (c.count >= limit) retryMs = Math.max(retryMs, c.resetMs);
    }
    if (retryMs > 0) {
      const seconds = Math.max(1, Math.ceil(retryMs / 1000));
      throw new AppError('rate_limited', `Too many failed token requests; retry after ${seconds} s.`, {
        headers: { 'Retry-After': String(seconds) },
      });
    }
  }

  /** Counts one failed client authentication. */
  async recordFailure(clientId: string | undefined, address: string): Promise<void> {
    await Promise.all(
      this.keys(clientId, address).map(async ([key]) => {
        try {
          await this.store.hit(key, this.config.tokenGuardWindowMs);
        } catch (err) {
          this.onStoreError(err as Error);
        }
      }),
    );
  }
}
