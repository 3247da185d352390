/**
 * Per-trader books, kept the way the upstream provider states a profile: cash flows of fills and
 * position legs, holdings marked at the market's last trade (or at 1/0 once resolved), average cost for
 * the realized / unrealized split.
 *
 *   pnl            = historical + cash + portfolio value
 *   pnl_realized   = historical + cash + cost basis of what is still held
 *   pnl_unrealized = portfolio value − cost basis of what is still held
 *
 * Token amounts are whole hundredths of a token ("centi-tokens") so that holdings add up exactly and a
 * position sold or redeemed in full is exactly zero.
 */
import type { TokenSide } from '../../contract/primitives.ts';

/** What a position is marked at: the market's last print (UP space, cents) or its winner once resolved. */
export interface MarketMark {
  /** Null until the market has printed in the simulated period. */
  lastUpCents: number | null;
  /** 0 while open. */
  winner: 0 | TokenSide;
}

export interface Position {
  readonly trader: number;
  readonly mark: MarketMark;
  centi1: number;
  centi2: number;
  cost1: number;
  cost2: number;
}

export class TraderLedger {
  cash = 0;
  /** Positions that still hold tokens (or await resolution). */
  readonly open = new Set<Position>();

  constructor(readonly historicalPnlUsd: number) {}
}

export interface Standing {
  pnl: number;
  pnlRealized: number;
  pnlUnrealized: number;
  portfolioValue: number;
}

export function openPosition(ledger: TraderLedger, trader: number, mark: MarketMark): Position {
  const position: Position = { trader, mark, centi1: 0, centi2: 0, cost1: 0, cost2: 0 };
  ledger.open.add(position);
  return position;
}

export function heldCenti(position: Position, side: TokenSide): number {
  return side === 1 ? position.centi1 : position.centi2;
}

function addTokens(position: Position, side: TokenSide, centi: number, cost: number): void {
  if (side === 1) {
    position.centi1 += centi;
    position.cost1 += cost;
  } else {
    position.centi2 += centi;
    position.cost2 += cost;
  }
}

/** Removes tokens at average cost; a side emptied in full drops its cost exactly. */
function removeTokens(position: Position, side: TokenSide, centi: number): void {
  if (side === 1) {
    position.cost1 = centi >= position.centi1 ? 0 : position.cost1 - (position.cost1 * centi) / position.centi1;
    position.centi1 -= centi;
  } else {
    position.cost2 = centi >= position.centi2 ? 0 : position.cost2 - (position.cost2 * centi) / position.centi2;
    position.centi2 -= centi;
  }
}

export function applyBuy(ledger: TraderLedger, position: Position, side: TokenSide, centi: number, usd: number): void {
  ledger.cash -= usd;
  addTokens(position, side, centi, usd);
}

export function applySell(ledger: TraderLedger, position: Position, side: TokenSide, centi: number, usd: number): void {
  ledger.cash += usd;
  removeTokens(position, side, centi);
}

/** SPLIT: pay `usd`, receive as many tokens of each side; the cost is shared equally. */
export function applySplit(ledger: TraderLedger, position: Position, centi: number, usd: number): void {
  ledger.cash -= usd;
  addTokens(position, 1, centi, usd / 2);
  addTokens(position, 2, centi, usd / 2);
}

/** MERGE: give as many tokens of each side, receive `usd`. */
export function applyMerge(ledger: TraderLedger, position: Position, centi: number, usd: number): void {
  ledger.cash += usd;
  removeTokens(position, 1, centi);
  removeTokens(position, 2, centi);
}

/** Resolution: the losing side is worth nothing and leaves the books; true when nothing is left to redeem. */
export function applyResolution(ledger: TraderLedger, position: Position, winner: TokenSide): boolean {
  removeTokens(position, winner === 1 ? 2 : 1, heldCenti(position, winner === 1 ? 2 : 1));
  const settled = heldCenti(position, winner) === 0;
  if (settled) ledger.open.delete(position);
  return settled;
}

/** REDEEM: give the winning tokens, receive one dollar each; the position is settled. */
export function applyRedeem(
  ledger: TraderLedger,
  position: Position,
  side: TokenSide,
  centi: number,
  usd: number,
): void {
  ledger.cash += usd;
  removeTokens(position, side, centi);
  if (position.centi1 === 0 && position.centi2 === 0) ledger.open.delete(position);
}

function positionValue(position: Position): number {
  const { winner, lastUpCents } = position.mark;
  if (winner === 1) return position.centi1 / 100;
  if (winner === 2) return position.centi2 / 100;
  const up = lastUpCents ?? 50;
  return (position.centi1 * up + position.centi2 * (100 - up)) / 10_000;
}

export function standingOf(ledger: TraderLedger): Standing {
  let value = 0;
  let costBasis = 0;
  for (const position of ledger.open) {
    value += positionValue(position);
    costBasis += position.cost1 + position.cost2;
  }
  return {
    pnl: ledger.historicalPnlUsd + ledger.cash + value,
    pnlRealized: ledger.historicalPnlUsd + ledger.cash + costBasis,
    pnlUnrealized: value - costBasis,
    portfolioValue: value,
  };
}
