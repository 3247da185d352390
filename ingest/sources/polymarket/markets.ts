/**
 * Market metadata from export rows. Exports repeat the market's title, slug and icon on every row and
 * name the outcome each trade bought or sold; the catalog folds all rows of a market into one
 * `markets` metadata event. Outcome names a market's rows never show are inferred from the title.
 */
import type { MarketMetadataEvent } from '../../contract/events.ts';
import { EPOCH_MAX, EPOCH_MIN } from '../../contract/primitives.ts';
import { parseTitleWindow } from '../../contract/title-time.ts';
import type { MarketSighting } from './rows.ts';

type MarketCategory = MarketMetadataEvent['category'];

/** The contract's limits on metadata fields; an export's overlong text is cut, not a reason to lose the market. */
const MAX_TITLE = 500;
const MAX_SLUG = 300;
const MAX_OUTCOME = 200;
const MAX_ICON = 2000;

/** Well-known binary outcome pairs: seeing one side names the other. */
const OUTCOME_PAIRS: readonly (readonly [string, string])[] = [
  ['Up', 'Down'],
  ['Yes', 'No'],
  ['Over', 'Under'],
];

export interface MarketFacts {
  conditionId: string;
  title: string;
  slug: string;
  icon: string;
  /** Earliest and latest row timestamps seen for the market. */
  firstTs: number;
  lastTs: number;
  /** Outcome names by token side (index 0 = token 1), as rows named them. */
  outcomeNames: [string | undefined, string | undefined];
}

const CRYPTO_TITLE = /\bup or down\b/i;
const CRYPTO_SLUG = /(?:^|-)(?:updown|up-or-down)(?:-|$)/i;
/** "Oilers vs. Ducks", "Granby: Aleksandar Vukic vs Alexis Galarneau". */
const VERSUS = /\s+vs\.?\s+/i;
/** Slugs of the short crypto windows name their start: `btc-updown-15m-1767555900`. */
const UPDOWN_SLUG_WINDOW = /-updown-(\d+)m-(\d{9,11})$/i;

export function marketCategory(title: string, slug: string): MarketCategory {
  if (CRYPTO_TITLE.test(title) || CRYPTO_SLUG.test(slug)) return 'crypto';
  if (VERSUS.test(title)) return 'sports';
  return 'other';
}

/** The two sides of an "A vs. B" title, without a leading "League: " and a trailing ": Team to Advance" or "?". */
export function versusSides(title: string): [string, string] | undefined {
  const parts = title.split(VERSUS);
  if (parts.length !== 2) return undefined;
  const left = (parts[0] ?? '').split(': ').pop()?.trim() ?? '';
  const right = (parts[1] ?? '').split(/:|\?| - | \(/)[0]?.trim() ?? '';
  return left !== '' && right !== '' ? [left, right] : undefined;
}

function sameName(a: string, b: string): boolean {
  return a.localeCompare(b, 'en', { sensitivity: 'accent' }) === 0;
}

/** The other outcome of a binary market whose rows only ever named `known`. */
function counterpartOutcome(known: string, title: string): string {
  for (const [first, second] of OUTCOME_PAIRS) {
    if (sameName(known, first)) return second;
    if (sameName(known, second)) return first;
  }
  const sides = versusSides(title);
  if (sides !== undefined) {
    const [left, right] = sides;
    if (sameName(known, left) && !sameName(known, right)) return right;
    if (sameName(known, right)) return left;
  }
  return `Not ${known}`.slice(0, MAX_OUTCOME);
}

/** Outcome names when no row named either (markets seen only through MERGE / REDEEM legs). */
function outcomesFromTitle(title: string, slug: string): [string, string] {
  if (CRYPTO_TITLE.test(title) || CRYPTO_SLUG.test(slug)) return ['Up', 'Down'];
  // "Will Argentina vs. Switzerland end in a draw?" is a Yes/No question even though it names two teams.
  if (/^will\b/i.test(title) || title.endsWith('?')) return ['Yes', 'No'];
  const sides = versusSides(title);
  if (sides !== undefined) return sides;
  return ['Outcome 1', 'Outcome 2'];
}

export function inferOutcomeNames(
  title: string,
  slug: string,
  names: readonly [string | undefined, string | undefined],
): [string, string] {
  const [first, second] = names;
  if (first !== undefined && second !== undefined) return [first, second];
  if (first !== undefined) return [first, counterpartOutcome(first, title)];
  if (second !== undefined) return [counterpartOutcome(second, title), second];
  return outcomesFromTitle(title, slug);
}

function inContractRange(ts: number): number | null {
  return ts >= EPOCH_MIN && ts <= EPOCH_MAX ? ts : null;
}

/**
 * The window named in the title (the year taken from the market's first row); for the short crypto
 * windows whose title names none, the one in the slug.
 */
export function marketWindow(
  title: string,
  slug: string,
  referenceTs: number,
): { startTs: number | null; endTs: number | null } {
  const window = parseTitleWindow(title, referenceTs);
  if (window !== null) return { startTs: inContractRange(window.startTs), endTs: inContractRange(window.endTs) };
  const slugWindow = UPDOWN_SLUG_WINDOW.exec(slug);
  if (slugWindow !== null) {
    const startTs = Number(slugWindow[2]);
    return { startTs: inContractRange(startTs), endTs: inContractRange(startTs + Number(slugWindow[1]) * 60) };
  }
  return { startTs: null, endTs: null };
}

/** The metadata event of a market (the `markets` topic's input shape; validated by the caller). */
export function marketMetadata(facts: MarketFacts): MarketMetadataEvent {
  const title = (facts.title || facts.slug || facts.conditionId).slice(0, MAX_TITLE);
  const [outcome1, outcome2] = inferOutcomeNames(facts.title, facts.slug, facts.outcomeNames);
  const window = marketWindow(facts.title, facts.slug, facts.firstTs);
  return {
    type: 'metadata',
    condition_id: facts.conditionId,
    title,
    slug: facts.slug.slice(0, MAX_SLUG),
    outcome1: outcome1.slice(0, MAX_OUTCOME),
    outcome2: outcome2.slice(0, MAX_OUTCOME),
    category: marketCategory(facts.title, facts.slug),
    title_start_ts: window.startTs,
    end_ts: window.endTs,
    // The latest row seen: a later export of the same market (more rows) supersedes this one.
    version: facts.lastTs,
    icon: facts.icon.length <= MAX_ICON ? facts.icon : '',
  };
}

/** Folds the sightings of all rows of an import; the first non-empty title, slug, icon and outcome names win. */
export class MarketCatalog {
  private readonly markets = new Map<string, MarketFacts>();

  get size(): number {
    return this.markets.size;
  }

  observe(sighting: MarketSighting): void {
    let facts = this.markets.get(sighting.conditionId);
    if (facts === undefined) {
      facts = {
        conditionId: sighting.conditionId,
        title: sighting.title,
        slug: sighting.slug,
        icon: sighting.icon,
        firstTs: sighting.ts,
        lastTs: sighting.ts,
        outcomeNames: [undefined, undefined],
      };
      this.markets.set(sighting.conditionId, facts);
    } else {
      facts.title ||= sighting.title;
      facts.slug ||= sighting.slug;
      facts.icon ||= sighting.icon;
      facts.firstTs = Math.min(facts.firstTs, sighting.ts);
      facts.lastTs = Math.max(facts.lastTs, sighting.ts);
    }
    if (sighting.outcome !== undefined) {
      const slot = sighting.outcome.tokenSide === 1 ? 0 : 1;
      facts.outcomeNames[slot] ??= sighting.outcome.name;
    }
  }

  facts(conditionId: string): MarketFacts | undefined {
    return this.markets.get(conditionId);
  }

  /** Adds what another catalog saw, as if its sightings had come after this one's. */
  merge(other: MarketCatalog): void {
    for (const theirs of other.markets.values()) {
      const facts = this.markets.get(theirs.conditionId);
      if (facts === undefined) {
        this.markets.set(theirs.conditionId, { ...theirs, outcomeNames: [...theirs.outcomeNames] });
        continue;
      }
      facts.title ||= theirs.title;
      facts.slug ||= theirs.slug;
      facts.icon ||= theirs.icon;
      facts.firstTs = Math.min(facts.firstTs, theirs.firstTs);
      facts.lastTs = Math.max(facts.lastTs, theirs.lastTs);
      facts.outcomeNames[0] ??= theirs.outcomeNames[0];
      facts.outcomeNames[1] ??= theirs.outcomeNames[1];
    }
  }
}
