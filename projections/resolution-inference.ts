/**
 * Resolutions inferred from redemptions (issue 47). A redemption names no outcome; what it paid per token
 * and what the wallet held say which: tokens paid 1.00 each were the winner's, tokens paid nothing the
 * loser's, tokens paid 0.50 each a split payout's. Where no stated resolution is stored (the chain, Gamma,
 * the CLOB feed), the rollup refresh infers one from the redemptions of the pairs it recomputes and lands
 * it with source `redemptions`; every source (an import, a replay, the upstream poller, the archive) passes
 * through that refresh. A stated resolution supersedes it (migration 0026).
 *
 * A market whose redemptions disagree (one wallet's paid 1.00 for token 1, another's for token 2; or a
 * split against a winner; or against the resolution inferred earlier) gets no inference: the disagreement
 * is dead-lettered with its reason and the first inference, if any, stands until a stated one arrives.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BACKGROUND_READ, type Store } from './store.ts';
import { INFERRED_RESOLUTION_SOURCE } from './vocabulary.ts';

const INFER_RESOLUTIONS = readFileSync(path.join(import.meta.dirname, 'rollups', 'infer_resolutions.sql'), 'utf8');

/** The resolutions inferred earlier of these markets (one per market: the latest). */
const INFERRED_BEFORE = `
    SELECT condition_id, winner_token_side, payout1, payout2
    FROM {db:Identifier}.market_resolutions_v2
    WHERE condition_id IN {condition_ids:Array(String)} AND inferred = 1
    ORDER BY ts DESC
    LIMIT 1 BY condition_id`;

/** A micro-token: amounts have 6 decimals. */
const MICRO_TOKEN = 0.000001;

/** What one wallet's redemptions in one market were, with what it held there (infer_resolutions.sql). */
export interface RedemptionEvidence {
  wallet: string;
  condition_id: string;
  /** Tokens redeemed at 1.00 each, at nothing, at 0.50 each. */
  won_tokens: number;
  lost_tokens: number;
  split_tokens: number;
  /** The first redemption's time (epoch s). */
  first_ts: number;
  /** Tokens of each side bought (less sold), split and merged. */
  held1: number;
  held2: number;
}

/** A market's result: the winning token, or a split payout. */
export type InferredOutcome = 1 | 2 | 'split';

/** The side whose holdings could have been `tokens` redeemed: the one side that held enough, else the only side held at all. */
function sideThatHeld(evidence: RedemptionEvidence, tokens: number): 1 | 2 | null {
  const enough1 = evidence.held1 + MICRO_TOKEN >= tokens;
  const enough2 = evidence.held2 + MICRO_TOKEN >= tokens;
  if (enough1 !== enough2) return enough1 ? 1 : 2;
  if (enough1) return null;
  // Neither held enough: the rows hold only part of the history (an export starts somewhere). A wallet that
  // only ever held one side redeemed that side.
  const held1 = evidence.held1 > MICRO_TOKEN;
  const held2 = evidence.held2 > MICRO_TOKEN;
  if (held1 !== held2) return held1 ? 1 : 2;
  return null;
}

const outcomeName = (outcome: InferredOutcome) => (outcome === 'split' ? 'a split payout' : `token ${outcome} won`);

/**
 * What one wallet's redemptions say, with why; `outcome` null when they say nothing that can be told (a
 * wallet that held both sides equally is paid the same by a winner as by a split payout).
 */
export function outcomeOfRedemptions(evidence: RedemptionEvidence): {
  outcome: InferredOutcome | null;
  why: string;
  contradiction?: string;
} {
  const { wallet, won_tokens: won, lost_tokens: lost, split_tokens: split } = evidence;
  const paidOne = won > MICRO_TOKEN ? sideThatHeld(evidence, won) : null;
  const paidNothing = lost > MICRO_TOKEN ? sideThatHeld(evidence, lost) : null;
  const fromLoser = paidNothing === null ? null : paidNothing === 1 ? 2 : 1;
  if (paidOne !== null && fromLoser !== null && paidOne !== fromLoser)
    return {
      outcome: null,
      why: `${wallet} redeemed token ${paidOne} at 1.00 and token ${paidNothing} for nothing`,
      contradiction: `${wallet}'s redemptions paid 1.00 per token of token ${paidOne} and nothing per token of token ${paidNothing}: both outcomes won`,
    };
  if (paidOne !== null)
    return { outcome: paidOne, why: `${wallet} redeemed ${won} of token ${paidOne} at 1.00 per token` };
  if (fromLoser !== null)
    return { outcome: fromLoser, why: `${wallet} redeemed ${lost} of token ${paidNothing} for nothing` };
  if (split > MICRO_TOKEN) {
    const bothEqually =
      evidence.held1 > MICRO_TOKEN &&
      evidence.held2 > MICRO_TOKEN &&
      Math.abs(evidence.held1 - evidence.held2) <= MICRO_TOKEN;
    if (!bothEqually) return { outcome: 'split', why: `${wallet} redeemed ${split} tokens at 0.50 per token` };
  }
  return { outcome: null, why: `${wallet}'s redemptions name no side` };
}

/** A market's inference: a resolution to land, or the contradiction that stops it. */
export type MarketInference =
  | { condition_id: string; outcome: InferredOutcome; ts: number }
  | { condition_id: string; contradiction: string; evidence: RedemptionEvidence[] };

/**
 * Each market's inference from its wallets' evidence (rows of one market together or not) and the outcome
 * inferred for it earlier, if any. A market whose evidence agrees with the earlier inference needs nothing.
 */
export function inferResolutions(
  evidence: readonly RedemptionEvidence[],
  inferredBefore: ReadonlyMap<string, InferredOutcome>,
): MarketInference[] {
  const byMarket = new Map<string, RedemptionEvidence[]>();
  for (const row of evidence) byMarket.set(row.condition_id, [...(byMarket.get(row.condition_id) ?? []), row]);
  const inferences: MarketInference[] = [];
  for (const [conditionId, rows] of byMarket) {
    const said = rows.map((row) => ({ row, ...outcomeOfRedemptions(row) }));
    const own = said.find((one) => one.contradiction !== undefined);
    if (own) {
      inferences.push({ condition_id: conditionId, contradiction: own.contradiction!, evidence: rows });
      continue;
    }
    const telling = said.filter((one) => one.outcome !== null);
    if (telling.length === 0) continue;
    const before = inferredBefore.get(conditionId);
    const outcomes = new Set(telling.map((one) => one.outcome!));
    if (before !== undefined) outcomes.add(before);
    if (outcomes.size > 1) {
      const reasons = telling.map((one) => `${one.why} (${outcomeName(one.outcome!)})`);
      if (before !== undefined) reasons.push(`the resolution inferred earlier says ${outcomeName(before)}`);
      inferences.push({
        condition_id: conditionId,
        contradiction: `redemptions contradict: ${reasons.join('; ')}`,
        evidence: rows,
      });
      continue;
    }
    if (before !== undefined) continue;
    inferences.push({
      condition_id: conditionId,
      outcome: telling[0]!.outcome!,
      ts: Math.min(...telling.map((one) => one.row.first_ts)),
    });
  }
  return inferences;
}

const NUMERATORS: Record<InferredOutcome, [number, number]> = { 1: [1, 0], 2: [0, 1], split: [1, 1] };

function outcomeOfRow(row: { winner_token_side: number; payout1: number | null; payout2: number | null }) {
  if (row.winner_token_side === 1 || row.winner_token_side === 2) return row.winner_token_side;
  return 'split' as const;
}

/** A 52-bit number of a string (FNV-1a, twice): a market's dead letter has one offset, replaced by the next. */
function offsetOf(text: string): number {
  let low = 0x811c9dc5;
  let high = 0x01000193;
  for (let index = 0; index < text.length; index++) {
    low = Math.imul(low ^ text.charCodeAt(index), 0x01000193) >>> 0;
    high = Math.imul(high ^ text.charCodeAt(index), 0x811c9dc5) >>> 0;
  }
  return (high & 0xfffff) * 2 ** 32 + low;
}

/** The dead letters' topic: not a log topic; the redemptions the letter names came through `positions`. */
export const CONTRADICTION_TOPIC = 'positions.redemptions';

export interface InferenceOutcome {
  /** Markets given an inferred resolution. */
  resolved: string[];
  /** Dead letters written: markets whose redemptions disagree, with the reason. */
  contradictions: { condition_id: string; reason: string }[];
}

/**
 * Infers the resolutions the redemptions of the pairs staged under `batches` imply (the rollup refresh's
 * rows of those pairs are current), writes them to market_resolutions_v2 (source `redemptions`; not to the
 * landing table, which holds events: an inference is derived, as the rollups are), and records a
 * dead letter for each market whose redemptions disagree. `beforeLanding` is called with the markets about to
 * resolve before their resolutions land (to stage their holders: a crash in between leaves staged keys that
 * the orphan sweep recomputes, never a resolution whose holders were not staged).
 */
export async function inferStagedResolutions(
  store: Store,
  batches: readonly string[],
  beforeLanding: (conditionIds: string[]) => Promise<void>,
): Promise<InferenceOutcome> {
  const evidence = await store.query<RedemptionEvidence>(INFER_RESOLUTIONS, { batches }, BACKGROUND_READ);
  if (evidence.length === 0) return { resolved: [], contradictions: [] };
  const markets = [...new Set(evidence.map((row) => row.condition_id))];
  const before = await store.query<{
    condition_id: string;
    winner_token_side: number;
    payout1: number | null;
    payout2: number | null;
  }>(INFERRED_BEFORE, { condition_ids: markets }, BACKGROUND_READ);
  const inferences = inferResolutions(evidence, new Map(before.map((row) => [row.condition_id, outcomeOfRow(row)])));
  const resolutions = inferences.flatMap((inference) =>
    'outcome' in inference
      ? [
          {
            condition_id: inference.condition_id,
            winner_token_side: inference.outcome === 'split' ? 0 : inference.outcome,
            payout1: NUMERATORS[inference.outcome][0],
            payout2: NUMERATORS[inference.outcome][1],
            ts: inference.ts,
            inferred: 1,
            source: INFERRED_RESOLUTION_SOURCE,
          },
        ]
      : [],
  );
  const contradictions = inferences.flatMap((inference) =>
    'contradiction' in inference ? [{ ...inference, reason: inference.contradiction }] : [],
  );
  if (resolutions.length > 0) {
    await beforeLanding(resolutions.map((row) => row.condition_id));
    // The same inference made again (a refresh repeated) is the same insert.
    const token = `inferred-resolutions|${resolutions.map((row) => `${row.condition_id}:${row.winner_token_side}:${row.ts}`).join(',')}`;
    await store.insert('market_resolutions_v2', resolutions, token);
  }
  if (contradictions.length > 0) {
    const receivedAt = Math.floor(Date.now() / 1000);
    await store.insert(
      'dead_letters',
      contradictions.map((letter) => ({
        topic: CONTRADICTION_TOPIC,
        partition: 0,
        offset: offsetOf(letter.condition_id),
        reason: `market ${letter.condition_id}: ${letter.reason}; no resolution is inferred`,
        original_base64: Buffer.from(JSON.stringify(letter.evidence)).toString('base64'),
        received_at: receivedAt,
      })),
    );
  }
  return {
    resolved: resolutions.map((row) => row.condition_id),
    contradictions: contradictions.map((letter) => ({ condition_id: letter.condition_id, reason: letter.reason })),
  };
}
