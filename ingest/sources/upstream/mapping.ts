/**
 * Provider answers → contract events. Pure: no I/O, never throws; each piece of an answer becomes events
 * or a rejection with its reason (the rest of the page is used).
 *
 * - Gamma markets (alone, in `/markets/keyset` pages, or inside `/events`) → `markets` metadata, tokens
 *   and resolution events.
 * - data API `/activity` and `/trades` rows (v1 arrays or v2 `{data, pagination}`) → the importer's own
 *   row mapping (`parseExportRow`): one mapping for both.
 * - leaderboard, `/value`, `/positions` → `upstream.profiles`; user-pnl `[{t, p}]` → `upstream.equity`;
 *   leaderboard pages → `upstream.leaderboard` (the popular shelf).
 */
import { normalizedConditionId } from '../../contract/positions-v2.ts';
import type {
  MarketEvent,
  MarketMetadataEvent,
  UpstreamEquityPointEvent,
  UpstreamLeaderboardEvent,
  UpstreamProfileEvent,
} from '../../contract/events.ts';
import type { MARKET_CATEGORIES } from '../../contract/events.ts';
import { EPOCH_MAX, EPOCH_MIN } from '../../contract/primitives.ts';
import type { EventOf, TopicId } from '../../contract/topics.ts';
import { marketCategory, marketWindow } from '../polymarket/markets.ts';
import { envelopeRows } from '../polymarket/readers.ts';
import { parseExportRow, validateEvent, type ParsedRow } from '../polymarket/rows.ts';

export interface Rejection {
  /** What was rejected: "gamma market 0x…", "activity row 3", … */
  what: string;
  reason: string;
  raw: unknown;
}

type MarketCategory = (typeof MARKET_CATEGORIES)[number];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string {
  return typeof value === 'string'
    ? value.trim()
    : typeof value === 'number' && Number.isFinite(value)
      ? String(value)
      : '';
}

/** Gamma encodes arrays as JSON strings (`"[\"Yes\", \"No\"]"`); newer answers may send real arrays. */
function gammaArray(value: unknown): string[] | undefined {
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  if (!Array.isArray(parsed)) return undefined;
  const strings = parsed.map((item) =>
    typeof item === 'string' ? item : typeof item === 'number' ? String(item) : undefined,
  );
  return strings.every((item): item is string => item !== undefined) ? strings : undefined;
}

/** ISO 8601 or Gamma's "YYYY-MM-DD hh:mm:ss+00" → epoch seconds in the contract's range; null otherwise. */
export function epochOf(value: unknown): number | null {
  const raw = text(value);
  if (raw === '') return null;
  const iso = raw.replace(' ', 'T').replace(/\+00$/, 'Z');
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return null;
  const seconds = Math.floor(ms / 1000);
  return seconds >= EPOCH_MIN && seconds <= EPOCH_MAX ? seconds : null;
}

const CATEGORY_WORDS: readonly [RegExp, MarketCategory][] = [
  [/crypto|bitcoin|ethereum/i, 'crypto'],
  [/politic|election|geopolitic/i, 'politics'],
  [/sport|soccer|football|basketball|tennis|esport|nba|nfl|mlb|nhl/i, 'sports'],
];

function categoryOfWords(words: readonly string[]): MarketCategory | undefined {
  for (const [pattern, category] of CATEGORY_WORDS) if (words.some((word) => pattern.test(word))) return category;
  return undefined;
}

/**
 * The market's category: Gamma's own `category` (legacy markets), its event's tags, a sports market type
 * or game id, and last the title and slug (as the importer decides: "Up or Down" is crypto, "A vs. B" sports).
 */
function gammaCategory(market: Record<string, unknown>, context: GammaContext): MarketCategory {
  const own = categoryOfWords([text(market.category), text(context.category)].filter(Boolean));
  if (own !== undefined) return own;
  const tags = categoryOfWords(context.tags ?? []);
  if (tags !== undefined) return tags;
  if (text(market.sportsMarketType) !== '' || text(market.gameId) !== '') return 'sports';
  return marketCategory(text(market.question), text(market.slug));
}

export interface GammaContext {
  /** The enclosing event's category, tags and negRisk (an `/events` answer nests its markets). */
  category?: string;
  tags?: string[];
  negRisk?: boolean;
  /** The enclosing event's `updatedAt` (epoch s): the metadata's version is at least this. */
  updatedAt?: number;
}

/** Payout vectors Gamma states once a market is resolved: outcome prices of exactly 1/0, 0/1, or ½/½. */
function payoutOf(prices: string[] | undefined): { winner: 1 | 2 | null; numerators: [number, number] } | undefined {
  if (prices === undefined || prices.length !== 2) return undefined;
  const [first, second] = prices.map(Number) as [number, number];
  if (first === 1 && second === 0) return { winner: 1, numerators: [1, 0] };
  if (first === 0 && second === 1) return { winner: 2, numerators: [0, 1] };
  if (first === 0.5 && second === 0.5) return { winner: null, numerators: [1, 1] };
  return undefined;
}

function tagLabels(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((tag) => (isRecord(tag) ? [text(tag.label), text(tag.slug)].filter(Boolean) : []));
}

export interface MappedMarket {
  events: MarketEvent[];
  rejected: Rejection[];
}

function checked<T extends TopicId>(
  topicId: T,
  candidate: unknown,
  what: string,
  raw: unknown,
  rejected: Rejection[],
): EventOf<T> | undefined {
  const result = validateEvent(topicId, candidate);
  if (result.ok) return result.event;
  rejected.push({ what, reason: result.reason, raw });
  return undefined;
}

/**
 * One Gamma market → its metadata (version: Gamma's `updatedAt`, so the same state republished is the
 * same event), its two token ids, and its resolution once Gamma states the payout (closed, outcome prices
 * 1/0, 0/1, or ½/½ for a split). A market whose outcomes are not two is rejected (the contract is binary).
 *
 * Read inside its `/events` answer, a market's version is the later of its own and its event's
 * `updatedAt`: the event knows the tags (the category) a market read alone does not, so its reading of a
 * market replaces the bare market's of the same state (the recorded event was updated after its
 * markets); a market changed since (a newer `updatedAt` of its own) replaces it in turn.
 */
export function mapGammaMarket(market: unknown, given: GammaContext = {}): MappedMarket {
  const rejected: Rejection[] = [];
  const events: MarketEvent[] = [];
  if (!isRecord(market)) return { events, rejected: [{ what: 'gamma market', reason: 'not an object', raw: market }] };
  // A market read alone (a /markets page) may nest its event: its category and tags describe the market too.
  const nested = Array.isArray(market.events) && isRecord(market.events[0]) ? market.events[0] : undefined;
  const context: GammaContext =
    given.category !== undefined || given.tags !== undefined || nested === undefined
      ? given
      : { ...given, category: text(nested.category), tags: tagLabels(nested.tags) };
  const conditionId = normalizedConditionId(text(market.conditionId));
  const what = `gamma market ${conditionId || text(market.id) || '?'}`;
  const outcomes = gammaArray(market.outcomes);
  if (outcomes === undefined || outcomes.length !== 2) {
    return {
      events,
      rejected: [
        { what, reason: `outcomes must be two names (got ${JSON.stringify(market.outcomes ?? null)})`, raw: market },
      ],
    };
  }
  const title = text(market.question) || text(market.title);
  const slug = text(market.slug);
  const ownUpdatedAt = epochOf(market.updatedAt) ?? epochOf(market.createdAt) ?? 0;
  const updatedAt = Math.max(ownUpdatedAt, context.updatedAt ?? 0);
  const endTs = epochOf(market.endDate);
  const window = marketWindow(title, slug, epochOf(market.startDate) ?? ownUpdatedAt);

  const metadata = checked(
    'markets',
    {
      type: 'metadata',
      condition_id: conditionId,
      title: title.slice(0, 500),
      slug: slug.slice(0, 300),
      outcome1: outcomes[0]!.slice(0, 200),
      outcome2: outcomes[1]!.slice(0, 200),
      category: gammaCategory(market, context),
      title_start_ts: window.startTs,
      end_ts: endTs ?? window.endTs,
      version: updatedAt,
      icon: text(market.icon).length <= 2000 ? text(market.icon) : '',
    } satisfies MarketMetadataEvent,
    what,
    market,
    rejected,
  );
  if (metadata === undefined) return { events, rejected };
  events.push(metadata);

  // Protocol V2 markets name PositionManager position ids, V1 markets CTF token ids: chosen by `version`,
  // never by which field is present.
  const tokenField = text(market.version) === 'v2' ? 'positionIds' : 'clobTokenIds';
  const tokenIds = gammaArray(market[tokenField]);
  if (tokenIds !== undefined && tokenIds.length === 2) {
    const negRisk = typeof market.negRisk === 'boolean' ? market.negRisk : (context.negRisk ?? false);
    const tokens = checked(
      'markets',
      { type: 'tokens', condition_id: conditionId, token1_id: tokenIds[0], token2_id: tokenIds[1], neg_risk: negRisk },
      what,
      market,
      rejected,
    );
    if (tokens !== undefined) events.push(tokens);
  } else if (market[tokenField] !== undefined && market[tokenField] !== null) {
    rejected.push({
      what,
      reason: `${tokenField} must be two token ids (got ${JSON.stringify(market[tokenField])})`,
      raw: market,
    });
  }

  if (market.closed === true) {
    const payout = payoutOf(gammaArray(market.outcomePrices));
    const ts = epochOf(market.closedTime) ?? epochOf(market.umaEndDate) ?? (ownUpdatedAt > 0 ? ownUpdatedAt : null);
    if (payout !== undefined && ts !== null) {
      const resolution = checked(
        'markets',
        {
          type: 'resolution',
          condition_id: conditionId,
          winner_token_side: payout.winner,
          payout_numerators: payout.numerators,
          ts,
          source: 'gamma',
        },
        what,
        market,
        rejected,
      );
      if (resolution !== undefined) events.push(resolution);
    }
  }
  return { events, rejected };
}

/** Gamma markets pages: a bare array, `{markets, next_cursor}` (keyset) or `{data, next_cursor}`. */
export function gammaMarketsPage(body: unknown): { markets: unknown[]; nextCursor: string | null } | undefined {
  if (Array.isArray(body)) return { markets: body, nextCursor: null };
  if (isRecord(body)) {
    const markets = Array.isArray(body.markets) ? body.markets : Array.isArray(body.data) ? body.data : undefined;
    if (markets === undefined) return undefined;
    const cursor = text(body.next_cursor) || text(body.nextCursor);
    return { markets, nextCursor: cursor === '' || cursor === 'LTE=' ? null : cursor };
  }
  return undefined;
}

/** Gamma events pages: a bare array, `{events, next_cursor}` (`/events/keyset`, `/public-search`) or `{data, next_cursor}`. */
export function gammaEventsPage(body: unknown): { events: unknown[]; nextCursor: string | null } | undefined {
  if (Array.isArray(body)) return { events: body, nextCursor: null };
  if (isRecord(body)) {
    const events = Array.isArray(body.events) ? body.events : Array.isArray(body.data) ? body.data : undefined;
    if (events === undefined) return undefined;
    const cursor = text(body.next_cursor) || text(body.nextCursor);
    return { events, nextCursor: cursor === '' || cursor === 'LTE=' ? null : cursor };
  }
  return undefined;
}

/** One Gamma event: every nested market, with the event's context (category, tags, negRisk, updatedAt). */
export function mapGammaEvent(event: unknown): MappedMarket {
  if (!isRecord(event) || !Array.isArray(event.markets))
    return { events: [], rejected: [{ what: 'gamma event', reason: 'no markets', raw: event }] };
  const updatedAt = epochOf(event.updatedAt);
  const context: GammaContext = {
    category: text(event.category),
    tags: tagLabels(event.tags),
    negRisk: event.negRisk === true,
    ...(updatedAt === null ? {} : { updatedAt }),
  };
  const out: MappedMarket = { events: [], rejected: [] };
  for (const market of event.markets) {
    const mapped = mapGammaMarket(market, context);
    out.events.push(...mapped.events);
    out.rejected.push(...mapped.rejected);
  }
  return out;
}

/** A Gamma `/events` answer (array, or `{events}` as /events/keyset and /public-search give): every nested market, with its event's context. */
export function mapGammaEvents(body: unknown): MappedMarket {
  const page = gammaEventsPage(body);
  if (page === undefined)
    return { events: [], rejected: [{ what: 'gamma events', reason: 'not a list of events', raw: body }] };
  const out: MappedMarket = { events: [], rejected: [] };
  for (const event of page.events) {
    const mapped = mapGammaEvent(event);
    out.events.push(...mapped.events);
    out.rejected.push(...mapped.rejected);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// data API

/** The rows of a data API answer: a v1 array or a v2 `{data, pagination}` envelope, with its next cursor. */
export function dataApiPage(
  body: unknown,
): { rows: unknown[]; nextCursor: string | null; hasMore: boolean } | undefined {
  if (Array.isArray(body)) return { rows: body, nextCursor: null, hasMore: false };
  const rows = envelopeRows(body);
  if (rows === undefined) return undefined;
  const pagination = (body as { pagination: Record<string, unknown> }).pagination;
  const cursor = text(pagination.next_cursor) || text(pagination.nextCursor);
  return {
    rows,
    nextCursor: cursor === '' ? null : cursor,
    hasMore: pagination.has_more === true || pagination.hasMore === true,
  };
}

export interface MappedActivity {
  parsed: Extract<ParsedRow, { kind: 'fill' } | { kind: 'leg' }>[];
  skipped: number;
  rejected: Rejection[];
}

/** The era of a fill or leg at `ts`: one rule for the upstream, the importer and the archive's legs (primitives.ts). */
export { exchangeEraAt } from '../../contract/primitives.ts';

/** `/activity` or `/trades` rows through the importer's row mapping, each fill and leg stamped with the era of its time. */
export function mapActivityRows(rows: readonly unknown[], v2StartTs: number, origin: string): MappedActivity {
  const out: MappedActivity = { parsed: [], skipped: 0, rejected: [] };
  rows.forEach((row, index) => {
    const parsed = parseExportRow(row, { v2StartTs });
    if (parsed.kind === 'rejected')
      out.rejected.push({ what: `${origin} row ${index + 1}`, reason: parsed.reason, raw: row });
    else if (parsed.kind === 'skipped') out.skipped += 1;
    else out.parsed.push(parsed);
  });
  return out;
}

/** The leaderboard fills `userName` with the wallet (and a suffix) for traders who never chose a name. */
function displayName(userName: string, wallet: string): string {
  return userName.toLowerCase().startsWith(wallet.toLowerCase()) ? '' : userName.slice(0, 200);
}

export interface ProfileSources {
  wallet: string;
  /** The leaderboard row of this wallet over all time, ordered by PNL (`/v1/leaderboard?user=…&timePeriod=ALL`); undefined when it has none. */
  leaderboard: unknown;
  /** `/value?user=…`: `[{user, value}]`. */
  value: unknown;
  /** `/positions?user=…` rows (open positions: `cashPnl` is each one's unrealized profit). */
  positions: readonly unknown[];
  asOf: number;
}

function finite(value: unknown): number | undefined {
  const number =
    typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  return Number.isFinite(number) ? number : undefined;
}

/**
 * The provider's profile of a trader. Polymarket's profile page quotes the all-time leaderboard pnl
 * (realized plus unrealized, its own model): that is `pnl`. `pnl_unrealized` is the sum of the open
 * positions' `cashPnl`; `pnl_realized` the rest (pnl − unrealized), so the three agree as the contract's
 * card says. `portfolio_value` is `/value`. A wallet the leaderboard does not know has pnl 0.
 */
export function mapProfile(sources: ProfileSources): { profile?: UpstreamProfileEvent; rejected: Rejection[] } {
  const rejected: Rejection[] = [];
  const board = Array.isArray(sources.leaderboard) ? sources.leaderboard[0] : sources.leaderboard;
  const row = isRecord(board) ? board : {};
  const pnl = board === undefined ? 0 : finite(row.pnl);
  if (pnl === undefined)
    rejected.push({
      what: `leaderboard row of ${sources.wallet}`,
      reason: `pnl is not a number (${JSON.stringify(row.pnl ?? null)})`,
      raw: board,
    });
  const valueRow = Array.isArray(sources.value) ? sources.value[0] : sources.value;
  const portfolioValue = valueRow === undefined ? 0 : isRecord(valueRow) ? finite(valueRow.value) : undefined;
  if (portfolioValue === undefined)
    rejected.push({ what: `value of ${sources.wallet}`, reason: 'value is not a number', raw: sources.value });
  let unrealized = 0;
  sources.positions.forEach((position, index) => {
    const cashPnl = isRecord(position) ? finite(position.cashPnl ?? position.cash_pnl) : undefined;
    if (cashPnl === undefined)
      rejected.push({
        what: `position ${index + 1} of ${sources.wallet}`,
        reason: 'cashPnl is not a number',
        raw: position,
      });
    else unrealized += cashPnl;
  });
  const money = (usd: number) => Math.round(usd * 1e6) / 1e6;
  const candidate = {
    wallet: sources.wallet,
    name: displayName(text(row.userName ?? row.name), sources.wallet),
    profile_image: text(row.profileImage ?? row.profile_image).slice(0, 2000),
    pnl: money(pnl ?? 0),
    pnl_unrealized: money(unrealized),
    pnl_realized: money((pnl ?? 0) - unrealized),
    portfolio_value: money(portfolioValue ?? 0),
    as_of: sources.asOf,
  };
  // Without a headline pnl there is no profile to state (the card keeps the last good one).
  if (pnl === undefined) return { rejected };
  const profile = checked('upstreamProfiles', candidate, `profile of ${sources.wallet}`, candidate, rejected);
  return profile === undefined ? { rejected } : { profile, rejected };
}

/** user-pnl `[{t, p}]` → equity points (t epoch seconds, p the cumulative pnl in USD). */
export function mapEquity(
  wallet: string,
  body: unknown,
): { points: UpstreamEquityPointEvent[]; rejected: Rejection[] } {
  const rejected: Rejection[] = [];
  const points: UpstreamEquityPointEvent[] = [];
  const list = Array.isArray(body) ? body : (envelopeRows(body) ?? undefined);
  if (list === undefined)
    return {
      points,
      rejected: [{ what: `pnl series of ${wallet}`, reason: 'not a list of {t, p} points', raw: body }],
    };
  list.forEach((point, index) => {
    const t = isRecord(point) ? finite(point.t) : undefined;
    const p = isRecord(point) ? finite(point.p) : undefined;
    const event = checked(
      'upstreamEquity',
      { wallet, ts: t, pnl_usd: p },
      `pnl point ${index + 1} of ${wallet}`,
      point,
      rejected,
    );
    if (event !== undefined) points.push(event);
  });
  return { points, rejected };
}

/** A leaderboard page → the shelf's rows (the rank is the row's, or its position). */
export function mapLeaderboard(
  body: unknown,
  board: { period: string; metric: string; asOf: number },
): { rows: UpstreamLeaderboardEvent[]; rejected: Rejection[] } {
  const rejected: Rejection[] = [];
  const rows: UpstreamLeaderboardEvent[] = [];
  const list = Array.isArray(body) ? body : (envelopeRows(body) ?? undefined);
  if (list === undefined) return { rows, rejected: [{ what: 'leaderboard', reason: 'not a list of rows', raw: body }] };
  // The first row of a wallet wins (the better rank); the provider's case of the hex is not a second trader.
  const rowOfWallet = new Map<string, number>();
  list.forEach((entry, index) => {
    const what = `leaderboard row ${index + 1}`;
    const row = isRecord(entry) ? entry : {};
    const wallet = text(row.proxyWallet ?? row.proxy_wallet).toLowerCase();
    // Held to the profile path's rule: a value that is not a finite number is refused, never read as 0.
    const pnl = finite(row.pnl);
    const vol = finite(row.vol);
    for (const [field, value] of [
      ['pnl', pnl],
      ['vol', vol],
    ] as const)
      if (value === undefined) {
        rejected.push({ what, reason: `${field} is not a number (${JSON.stringify(row[field] ?? null)})`, raw: entry });
        return;
      }
    const earlier = rowOfWallet.get(wallet);
    if (earlier !== undefined) {
      rejected.push({ what, reason: `wallet ${wallet} repeats leaderboard row ${earlier}`, raw: entry });
      return;
    }
    const candidate = {
      period: board.period,
      metric: board.metric,
      as_of: board.asOf,
      rank: finite(row.rank) ?? index + 1,
      wallet,
      name: displayName(text(row.userName ?? row.user_name), wallet),
      profile_image: text(row.profileImage ?? row.profile_image).slice(0, 2000),
      pnl,
      vol,
    };
    const event = checked('upstreamLeaderboard', candidate, what, entry, rejected);
    if (event === undefined) return;
    rowOfWallet.set(event.wallet, index + 1);
    rows.push(event);
  });
  return { rows, rejected };
}
