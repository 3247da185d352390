/**
 * What every route receives: the configuration, the store (reads bounded by the query timeout), the
 * cursor codecs, the clock, and the resolution of `{trader}` identifiers to a canonical wallet and name.
 */
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { findWalletByName, parseTraderIdentifier, readTraderName, type Trader } from '../projections/traders.ts';
import type { Caller } from './auth.ts';
import type { Cursors } from './cursors.ts';
import { errors } from './errors.ts';

export type ApiApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, ZodTypeProvider>;

/** Usage numbers of `/me`; the gates (Redis) provide the real ones. */
export interface UsageReport {
  window: { tokens_remaining: number; rpm_used: number };
  day: { requests: number; cap: number };
  month: { requests: number; cap: number };
}

export interface RouteContext {
  config: Config;
  store: Store;
  log: Logger;
  cursors: Cursors;
  /** Epoch seconds. */
  now(): number;
  resolveTrader(identifier: string): Promise<Trader>;
  usage(caller: Caller): Promise<UsageReport>;
}

/** `{trader}` → canonical wallet and name; `400 invalid_wallet`, `404 trader_not_found`. */
export async function resolveTrader(store: Store, identifier: string): Promise<Trader> {
  const parsed = parseTraderIdentifier(identifier);
  if (parsed.kind === 'invalid_wallet') throw errors.invalidWallet(parsed.input);
  if (parsed.kind === 'wallet') return { wallet: parsed.wallet, name: await readTraderName(store, parsed.wallet) };
  const found = await findWalletByName(store, parsed.name);
  if (!found) throw errors.traderNotFound(parsed.name);
  return found;
}

/** Until the gates are wired: a full bucket and nothing used, against the plan's caps. */
export function staticUsage(caller: Caller): Promise<UsageReport> {
  return Promise.resolve({
    window: { tokens_remaining: caller.limits.burst, rpm_used: 0 },
    day: { requests: 0, cap: caller.limits.dailyRequests },
    month: { requests: 0, cap: caller.limits.monthlyRequests },
  });
}
