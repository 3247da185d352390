/**
 * Authentication: `Authorization: Bearer <key>`, looked up by the key's SHA-256 in the keys projection
 * and compared in constant time. Unknown, revoked, malformed and missing keys get the same 401; a key
 * in the query string is never read (the message points to the header instead).
 *
 * Lookups are cached briefly (positive and negative) so that a hot key costs no query per request, and
 * refreshed ahead of their end so that it never waits for one; a revocation takes effect within
 * `keyCacheSeconds`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Config, PlanId, PlanLimits } from '../config.ts';
import { effectivePlan } from '../config.ts';
import { readKeysByHash, type KeyRecord } from '../projections/accounts.ts';
import type { Store } from '../projections/store.ts';
import { type ApiError, errors } from './errors.ts';
import { KeptLookups } from './read-cache.ts';

export interface Caller {
  accountId: string;
  keyId: string;
  label: string;
  last4: string;
  planId: PlanId;
  limits: PlanLimits;
}

const BEARER = /^Bearer[ \t]+([!-~]{1,512})[ \t]*$/i;
const QUERY_KEY_NAMES = ['key', 'api_key', 'apikey', 'token', 'access_token'];
const CACHE_MAX_ENTRIES = 10_000;

export class Authenticator {
  /** Callers by key hash, kept for `keyCacheSeconds` from their read and read again behind the calls. */
  readonly #callers: KeptLookups<Caller | null>;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    now: () => number = Date.now,
  ) {
    this.#callers = new KeptLookups(
      CACHE_MAX_ENTRIES,
      config.api.keyCacheSeconds * 1000,
      async (keySha256) => this.#toCaller(keySha256, await readKeysByHash(this.store, keySha256)),
      { clock: { now } },
    );
  }

  /** The caller of a request, or the contract's 401. */
  async authenticate(authorization: string | undefined, query: unknown): Promise<Caller> {
    const match = authorization === undefined ? null : BEARER.exec(authorization);
    if (!match) throw this.#refusal(query);
    const keySha256 = createHash('sha256').update(match[1]!).digest('hex');
    // A key in use never waits for the store, which under overload would hold every call of the key,
    // refusals included, behind the store's running reads; a revocation takes effect within the window.
    const caller = await this.#callers.get(keySha256);
    if (!caller) throw this.#refusal(query);
    return caller;
  }

  #refusal(query: unknown): ApiError {
    const inQuery = typeof query === 'object' && query !== null && QUERY_KEY_NAMES.some((name) => name in query);
    return inQuery
      ? errors.unauthorized(
          'API keys are never accepted in the query string: send the key as "Authorization: Bearer <API_KEY>".',
        )
      : errors.unauthorized();
  }

  #toCaller(keySha256: string, records: readonly KeyRecord[]): Caller | null {
    const expected = Buffer.from(keySha256, 'hex');
    for (const record of records) {
      const stored = Buffer.from(record.keySha256, 'hex');
      if (stored.length !== expected.length || !timingSafeEqual(stored, expected)) continue;
      if (record.revoked || !record.account) continue;
      const planId = effectivePlan(record.account.plan, record.account.founder);
      if (!planId) continue;
      return {
        accountId: record.accountId,
        keyId: record.keyId,
        label: record.label,
        last4: record.last4,
        planId,
        limits: this.config.plans[planId],
      };
    }
    return null;
  }
}
