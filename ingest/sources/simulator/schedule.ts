/**
 * The market schedule: which markets exist, when each is listed, trades, ends and resolves. It is a
 * pure function of the seed and of absolute time (crypto windows align to the wall clock, politics and
 * sports sit in fixed slots), so any stretch of time can be asked about on its own.
 */
import { formatTitleWindow, MARKET_TIME_ZONE } from '../../contract/title-time.ts';
import { CRYPTO_ASSETS, POLITICS_ICON, POLITICS_QUESTIONS, SPORTS_LEAGUES } from './catalog.ts';
import { conditionIdOf, idWords } from './ids.ts';
import { keyOf } from './random.ts';

export type MarketKind = 'crypto5' | 'crypto15' | 'crypto60' | 'politics' | 'sports';

export interface MarketSpec {
  kind: MarketKind;
  slug: string;
  conditionId: string;
  /** The condition id as eight words, for deriving transaction hashes. */
  idWords: Uint32Array;
  /** Keys the market's own draws (price path, order flow, plans). */
  key: number;
  title: string;
  outcome1: string;
  outcome2: string;
  category: 'crypto' | 'politics' | 'sports';
  titleStartTs: number | null;
  icon: string;
  /** Metadata appears on the log at this instant (its version). */
  publishTs: number;
  /** Trading runs over [openTs, endTs). */
  openTs: number;
  endTs: number;
  /** Sports only: the game starts here; before it the price barely moves. */
  gameStartTs: number | null;
  resolveTs: number;
  /** A total order of markets, used to order events of one second across markets. */
  orderKey: number;
}

interface CryptoCadence {
  kind: 'crypto5' | 'crypto15' | 'crypto60';
  seconds: number;
  code: number;
}

const CRYPTO_CADENCES: readonly CryptoCadence[] = [
  { kind: 'crypto5', seconds: 300, code: 0 },
  { kind: 'crypto15', seconds: 900, code: 4 },
  { kind: 'crypto60', seconds: 3600, code: 8 },
];
const POLITICS_CODE = 12;
const SPORTS_CODE = 13;
const ORDER_CODES = 16;

const MINUTE = 60;
const HOUR = 3600;
const DAY = 86_400;

const CRYPTO_MAX_LEAD = 600;
/** A new politics market every 36 hours, running 4 to 21 days: about eight open at any time. */
const POLITICS_PERIOD = 36 * HOUR;
const POLITICS_MAX_DURATION = 21 * DAY;
const POLITICS_MAX_LEAD = HOUR;
const POLITICS_MAX_RESOLVE_DELAY = 2 * HOUR;
/** A game every three hours, listed six hours before it starts. */
const SPORTS_PERIOD = 3 * HOUR;
const SPORTS_LISTING_AHEAD = 6 * HOUR;
const SPORTS_MAX_LEAD = HOUR;

/** The longest a market lives from its opening to its resolution, plus slack. */
const MAX_MARKET_LIFETIME = POLITICS_MAX_DURATION + POLITICS_MAX_RESOLVE_DELAY + DAY;
const MAX_LEAD = Math.max(CRYPTO_MAX_LEAD, POLITICS_MAX_LEAD, SPORTS_MAX_LEAD);

/** A scheduled market before its ids and titles are worked out (which costs a hash). */
interface MarketSlot {
  orderKey: number;
  openTs: number;
  publishTs: number;
  resolveTs: number;
  build: () => MarketSpec;
}

const easternDate = new Intl.DateTimeFormat('en-US', {
  timeZone: MARKET_TIME_ZONE,
  year: 'numeric',
  month: 'long',
  day: 'numeric',
  hour: 'numeric',
  hourCycle: 'h12',
});

function easternParts(epochSeconds: number): {
  year: string;
  month: string;
  day: string;
  hour: string;
  dayPeriod: string;
} {
  const parts = Object.fromEntries(
    easternDate.formatToParts(new Date(epochSeconds * 1000)).map((part) => [part.type, part.value]),
  );
  return {
    year: parts.year ?? '',
    month: parts.month ?? '',
    day: parts.day ?? '',
    hour: parts.hour ?? '',
    dayPeriod: parts.dayPeriod ?? '',
  };
}

function kebab(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

function spec(seed: number, fields: Omit<MarketSpec, 'conditionId' | 'idWords' | 'key'>): MarketSpec {
  const conditionId = conditionIdOf(seed, fields.slug);
  return { ...fields, conditionId, idWords: idWords(conditionId), key: keyOf(seed, 'market', fields.slug) };
}

function cryptoSlots(seed: number, fromOpen: number, toOpen: number, out: MarketSlot[]): void {
  for (const cadence of CRYPTO_CADENCES) {
    for (
      let start = Math.ceil(fromOpen / cadence.seconds) * cadence.seconds;
      start < toOpen;
      start += cadence.seconds
    ) {
      CRYPTO_ASSETS.forEach((asset, assetIndex) => {
        const code = cadence.code + assetIndex;
        const slotKey = keyOf(seed, 'crypto', code, start);
        const end = start + cadence.seconds;
        const publishTs = start - (MINUTE + (slotKey % (CRYPTO_MAX_LEAD - MINUTE + 1)));
        const resolveTs = end + 20 + ((slotKey >>> 12) % 100);
        out.push({
          orderKey: start * ORDER_CODES + code,
          openTs: start,
          publishTs,
          resolveTs,
          build: () => {
            const window = formatTitleWindow(start, end);
            const slug =
              cadence.kind === 'crypto60'
                ? `${kebab(asset.name)}-up-or-down-${kebab(window)}`
                : `${asset.code}-updown-${cadence.seconds / 60}m-${start}`;
            return spec(seed, {
              kind: cadence.kind,
              slug,
              title: `${asset.name} Up or Down - ${window}`,
              outcome1: 'Up',
              outcome2: 'Down',
              category: 'crypto',
              titleStartTs: start,
              icon: asset.icon,
              publishTs,
              openTs: start,
              endTs: end,
              gameStartTs: null,
              resolveTs,
              orderKey: start * ORDER_CODES + code,
            });
          },
        });
      });
    }
  }
}

function politicsSlots(seed: number, fromOpen: number, toOpen: number, out: MarketSlot[]): void {
  // Slot k opens within the first day of [k·period, (k+1)·period).
  for (let slot = Math.floor((fromOpen - DAY) / POLITICS_PERIOD); slot * POLITICS_PERIOD < toOpen; slot++) {
    const slotKey = keyOf(seed, 'politics', slot);
    const openTs = slot * POLITICS_PERIOD + (slotKey % (DAY / MINUTE)) * MINUTE;
    if (openTs < fromOpen || openTs >= toOpen) continue;
    const durationMinutes = 4 * 24 * 60 + ((slotKey >>> 7) % ((POLITICS_MAX_DURATION - 4 * DAY) / MINUTE));
    const endTs = openTs + durationMinutes * MINUTE;
    const publishTs = openTs - MINUTE * (1 + ((slotKey >>> 3) % 60));
    const resolveTs = endTs + 600 + ((slotKey >>> 11) % (POLITICS_MAX_RESOLVE_DELAY - 600));
    out.push({
      orderKey: openTs * ORDER_CODES + POLITICS_CODE,
      openTs,
      publishTs,
      resolveTs,
      build: () => {
        const date = easternParts(endTs);
        const question = POLITICS_QUESTIONS[(slotKey >>> 17) % POLITICS_QUESTIONS.length]!;
        const title = question.replace('{date}', `${date.month} ${date.day}`);
        return spec(seed, {
          kind: 'politics',
          slug: `${kebab(title)}-${slot}`,
          title,
          outcome1: 'Yes',
          outcome2: 'No',
          category: 'politics',
          titleStartTs: null,
          icon: POLITICS_ICON,
          publishTs,
          openTs,
          endTs,
          gameStartTs: null,
          resolveTs,
          orderKey: openTs * ORDER_CODES + POLITICS_CODE,
        });
      },
    });
  }
}

function sportsSlots(seed: number, fromOpen: number, toOpen: number, out: MarketSlot[]): void {
  const fromSlot = Math.floor((fromOpen + SPORTS_LISTING_AHEAD) / SPORTS_PERIOD) - 1;
  for (let slot = fromSlot; slot * SPORTS_PERIOD - SPORTS_LISTING_AHEAD < toOpen; slot++) {
    const slotKey = keyOf(seed, 'sports', slot);
    // Games start on a five-minute mark in the first hour of their slot.
    const gameStartTs = slot * SPORTS_PERIOD + (slotKey % 12) * 5 * MINUTE;
    const openTs = gameStartTs - SPORTS_LISTING_AHEAD;
    if (openTs < fromOpen || openTs >= toOpen) continue;
    const endTs = gameStartTs + (150 + ((slotKey >>> 5) % 41)) * MINUTE;
    const publishTs = openTs - MINUTE * (1 + ((slotKey >>> 3) % 60));
    const resolveTs = endTs + (5 + ((slotKey >>> 9) % 16)) * MINUTE;
    out.push({
      orderKey: openTs * ORDER_CODES + SPORTS_CODE,
      openTs,
      publishTs,
      resolveTs,
      build: () => {
        const league = SPORTS_LEAGUES[(slotKey >>> 13) % SPORTS_LEAGUES.length]!;
        const homeIndex = (slotKey >>> 16) % league.teams.length;
        const awayIndex = (homeIndex + 1 + ((slotKey >>> 20) % (league.teams.length - 1))) % league.teams.length;
        const home = league.teams[homeIndex]!;
        const away = league.teams[awayIndex]!;
        const date = easternParts(gameStartTs);
        return spec(seed, {
          kind: 'sports',
          slug: `${league.code}-${kebab(home)}-${kebab(away)}-${kebab(`${date.month} ${date.day} ${date.year} ${date.hour}${date.dayPeriod}`)}`,
          title: `${home} vs. ${away}`,
          outcome1: home,
          outcome2: away,
          category: 'sports',
          titleStartTs: null,
          icon: league.icon,
          publishTs,
          openTs,
          endTs,
          gameStartTs,
          resolveTs,
          orderKey: openTs * ORDER_CODES + SPORTS_CODE,
        });
      },
    });
  }
}

function slotsOpeningBetween(seed: number, fromOpen: number, toOpen: number): MarketSlot[] {
  const slots: MarketSlot[] = [];
  cryptoSlots(seed, fromOpen, toOpen, slots);
  politicsSlots(seed, fromOpen, toOpen, slots);
  sportsSlots(seed, fromOpen, toOpen, slots);
  return slots;
}

/**
 * Built specs by order key. Working out a spec costs a SHA-256 and an Intl date format, and a market is
 * asked for twice (listed, then opened), so the engine keeps what it built until the market opens.
 */
export type SpecMemo = Map<number, MarketSpec>;

function built(slots: readonly MarketSlot[], memo: SpecMemo | undefined): MarketSpec[] {
  return slots
    .map((slot) => {
      const known = memo?.get(slot.orderKey);
      if (known) return known;
      const spec = slot.build();
      memo?.set(slot.orderKey, spec);
      return spec;
    })
    .sort((left, right) => left.orderKey - right.orderKey);
}

/** Markets whose trading opens in [from, to), in market order. */
export function marketsOpeningBetween(seed: number, from: number, to: number, memo?: SpecMemo): MarketSpec[] {
  return built(slotsOpeningBetween(seed, from, to), memo);
}

/** Markets whose metadata is published in [from, to), in market order. */
export function marketsPublishedBetween(seed: number, from: number, to: number, memo?: SpecMemo): MarketSpec[] {
  return built(
    slotsOpeningBetween(seed, from, to + MAX_LEAD).filter((slot) => slot.publishTs >= from && slot.publishTs < to),
    memo,
  );
}

/** Markets already listed before `ts` and not yet resolved by then: the world as it stands at `ts`. */
export function marketsStandingAt(seed: number, ts: number, memo?: SpecMemo): MarketSpec[] {
  return built(
    slotsOpeningBetween(seed, ts - MAX_MARKET_LIFETIME, ts + MAX_LEAD).filter(
      (slot) => slot.publishTs < ts && slot.resolveTs >= ts,
    ),
    memo,
  );
}
