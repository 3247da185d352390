/**
 * What every route receives: the configuration, the store (reads bounded by the query timeout) and its
 * cached reads, the cursor codecs, the clock, and the resolution of `{trader}` identifiers to a canonical
 * wallet and name.
 */
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { findWalletByName, parseTraderIdentifier, type Trader } from '../projections/traders.ts';
import type { Caller } from './auth.ts';
import type { Cursors } from './cursors.ts';
import type { Reader } from './reads.ts';
import { ApiError, errors } from './errors.ts';
import type { Admission, Budget } from './gates/budget.ts';
import type { WalletRequestLog } from './wallet-requests.ts';
import type { InFlightLimiter } from './gates/in-flight.ts';
import { StoreSlot } from './gates/store-slot.ts';

export interface RouteContext {
  config: Config;
  store: Store;
  /** The store's reads through the read cache (operations/reads.ts). */
  reader: Reader;
  log: Logger;
  cursors: Cursors;
  /** Epoch seconds. */
  now(): number;
  resolveTrader(identifier: string): Promise<Trader>;
  budget: Budget;
  /** Where wallets clients ask about are noted for the upstream poller (absent without Redis). */
  walletRequests?: WalletRequestLog;
  /** Load shedding: the calls that read the store at once, and the queue in front of them (gates/store-slot.ts). */
  inFlight: InFlightLimiter;
  /** A user's live slots held now, on every instance (`/me`); absent where no slot store is kept. */
  liveSlotsInUse?: (userId: string) => Promise<number>;
  /** Live watchers of each watched trader now, on every instance (`/popular`); absent where no slot store is kept. */
  liveWatching?: () => Promise<Map<string, number>>;
}

/** Retry-After of a call refused by load shedding (503 overloaded, or 429 busy for a heavy read). */
const SHED_RETRY_SECONDS = 1;

/** A call the gates let through: its usage numbers, its trader (or the refusal to answer with), its slot. */
export interface AdmittedCall extends Admission {
  /**
   * The resolved `{trader}` of a trader-scoped call: its wallet, and its display name being read (started
   * at admission, not awaited there: an operation reads the store beside it, traderOf awaits it).
   */
  trader: TraderCall | null;
  /** Why `{trader}` did not resolve (400 invalid_wallet, 404 trader_not_found): answered after the call was counted. */
  traderRefusal: ApiError | null;
  /** The call's slot of the store's work: run the operation inside it (`storeSlot.run`). */
  storeSlot: StoreSlot;
}

/** A call's trader: the wallet known, the name on its way. */
export interface TraderCall {
  wallet: string;
  name: Promise<string>;
}

export interface CallRequest {
  address: string;
  /** The raw `{trader}` of a trader-scoped call. */
  trader?: string | undefined;
  heavy: boolean;
  /** Aborted when the caller goes away: the call's heavy-read slot comes back at once. */
  signal?: AbortSignal;
}

/**
 * Admits one call through the gates, the same way for every transport. The trader's wallet is needed
 * by the distinct-wallet gate, so a `{trader}` is resolved around it: a 0x wallet or profile URL is
 * parsed without the store; a display name is looked up first (it has no wallet until then). A trader
 * that does not resolve still costs a call (400 and 404 count), so its refusal is kept for the route.
 *
 * The plan's gates decide first; the store's capacity (load shedding) only when the call reads the
 * store: its slot is taken at its first store read (gates/store-slot.ts), so a call beyond its plan's
 * burst is the plan's 429 however busy the instance, and a call answered from memory is never shed. A
 * call shed after its admission gets back what the gates consumed: a 503 overloaded (or 429 busy)
 * consumes nothing, like any 429.
 */
export async function admitCall(context: RouteContext, caller: Caller, call: CallRequest): Promise<AdmittedCall> {
  const storeSlot = new StoreSlot(
    context.inFlight,
    caller.accountId,
    () => (call.heavy ? errors.busy(caller.limits, SHED_RETRY_SECONDS) : errors.overloaded(SHED_RETRY_SECONDS)),
    call.signal,
  );
  let admission: Admission;
  let wallet: string | null;
  let name: string | null;
  let traderRefusal: ApiError | null;
  try {
    const located =
      call.trader === undefined ? null : await storeSlot.run(() => locateTrader(context.store, call.trader!));
    traderRefusal = located instanceof ApiError ? located : null;
    wallet = located === null || located instanceof ApiError ? null : located.wallet;
    name = located === null || located instanceof ApiError ? null : located.name;
    const admitted = await context.budget.admit(caller, { address: call.address, wallet, heavy: call.heavy });
    storeSlot.onRefused = () => admitted.refund();
    admission = {
      ...admitted,
      release: () => {
        admitted.release();
        storeSlot.release();
      },
    };
  } catch (failure) {
    storeSlot.release();
    throw failure;
  }
  // A wallet asked about in an admitted call (the budget bounds how many a caller can name) reaches the
  // upstream poller, never the store: see wallet-requests.ts.
  if (wallet !== null) context.walletRequests?.note(wallet, context.now());
  if (call.signal?.aborted) admission.release();
  else call.signal?.addEventListener('abort', () => admission.release(), { once: true });
  // The name is read beside the operation's own reads, not before them: a failure (the call shed at this
  // read) reaches the operation when it awaits the name.
  const trader =
    wallet === null
      ? null
      : {
          wallet,
          name: name !== null ? Promise.resolve(name) : storeSlot.run(() => context.reader.traderName(wallet)),
        };
  trader?.name.catch(() => {});
  return { ...admission, trader, traderRefusal, storeSlot };
}

/**
 * What an operation (the body of a read, shared by its REST route and its MCP tool) knows of its call,
 * whatever the transport: who calls, and what the gates admitted.
 */
export interface Call {
  caller: Caller;
  admitted: AdmittedCall;
}

/** The admitted call's trader (its wallet, its name being read), or its refusal. */
export function traderCallOf(call: AdmittedCall | null): TraderCall {
  if (!call) throw new Error('trader-scoped route without an admitted call (its config lacks budget.traderScoped)');
  if (call.traderRefusal) throw call.traderRefusal;
  if (!call.trader) throw new Error('admitted call without a trader');
  return call.trader;
}

/** The admitted call's trader with its name, or its refusal. */
export async function traderOf(call: AdmittedCall | null): Promise<Trader> {
  const trader = traderCallOf(call);
  return { wallet: trader.wallet, name: await trader.name };
}

/**
 * `{trader}` → its wallet, without the store for a 0x wallet or profile URL (the name is then still to
 * be read), with one lookup for a display name; or the refusal: `400 invalid_wallet`, `404 trader_not_found`.
 */
async function locateTrader(
  store: Store,
  identifier: string,
): Promise<{ wallet: string; name: string | null } | ApiError> {
  const parsed = parseTraderIdentifier(identifier);
  if (parsed.kind === 'invalid_wallet') return errors.invalidWallet(parsed.input);
  if (parsed.kind === 'wallet') return { wallet: parsed.wallet, name: null };
  return (await findWalletByName(store, parsed.name)) ?? errors.traderNotFound(parsed.name);
}

/** `{trader}` → canonical wallet and name; `400 invalid_wallet`, `404 trader_not_found`. */
export async function resolveTrader(reader: Reader, identifier: string): Promise<Trader> {
  const located = await locateTrader(reader.store, identifier);
  if (located instanceof ApiError) throw located;
  return { wallet: located.wallet, name: located.name ?? (await reader.traderName(located.wallet)) };
}
