/**
 * Recorded sessions of the demo world: what the live plane publishes when an account's recording is
 * saved (`tapes` metadata plus its StreamEvents on `tape.events`). Small and deterministic: the same
 * seed, account and start give the same tapes, ids and events, so a replay changes nothing.
 */
import type { EventInputOf } from '../../contract/topics.ts';
import type { EventSink } from '../../publisher.ts';
import { TapeTally } from '../../../projections/tape-tally.ts';
import type { StreamEvent } from '../../../projections/tapes.ts';
import { keyOf, Rng } from './random.ts';

const hex = (rng: Rng, length: number) => Array.from({ length }, () => rng.below(16).toString(16)).join('');
const round = (value: number, digits = 4) => Math.round(value * 10 ** digits) / 10 ** digits;

export interface RecordedSession {
  tape: EventInputOf<'tapes'>;
  events: EventInputOf<'tapeEvents'>[];
}

/** One deterministic session of `accountId`: book ticks and trades every few seconds, a few fills, start/stop, maybe a resolution. */
export function recordSession(seed: number, accountId: string, index: number, startTs: number): RecordedSession {
  const rng = new Rng(keyOf(seed, 'tape', accountId, index));
  const tapeId = `tape_${hex(rng, 16)}`;
  const wallet = `0x${hex(rng, 40)}`;
  const conditionId = `0x${hex(rng, 64)}`;
  const [outcome1, outcome2] = rng.chance(0.5) ? ['Up', 'Down'] : ['Yes', 'No'];
  const duration = rng.intBetween(600, 1800);
  const resolves = rng.chance(0.5);
  const base = { tape_id: tapeId, account_id: accountId };
  const events: EventInputOf<'tapeEvents'>[] = [];
  // Counts, size, taped profit and grade by the rule every recorder shares (the live plane's too).
  const tally = new TapeTally();
  const push = (event: StreamEvent) => {
    tally.add(event);
    events.push({ ...base, seq: events.length, ...event });
  };
  push({ type: 'session', ts: startTs, state: 'start' });
  let price = rng.between(0.3, 0.7);
  for (let ts = startTs + 1; ts < startTs + duration; ts += rng.intBetween(2, 9)) {
    price = Math.min(0.98, Math.max(0.02, price + rng.normal() * 0.01));
    const spread = rng.between(0.005, 0.02);
    push({
      type: 'book',
      ts,
      bid: round(Math.max(0, price - spread / 2)),
      ask: round(Math.min(1, price + spread / 2)),
    });
    if (rng.chance(0.4)) {
      const size = round(rng.logUniform(5, 500), 2);
      const tokenSide = rng.chance(0.5) ? 1 : 2;
      push({
        type: 'trade',
        ts,
        price: round(price),
        size_tokens: size,
        usd: round(size * (tokenSide === 1 ? price : 1 - price), 2),
        token_side: tokenSide,
      });
    }
    if (rng.chance(0.03)) {
      const tokenSide = rng.chance(0.6) ? 1 : 2;
      const side = rng.chance(0.75) ? 'BUY' : 'SELL';
      const size = round(rng.logUniform(10, 2000), 2);
      const paid = tokenSide === 1 ? price : 1 - price;
      const usd = round(size * paid, 2);
      push({
        type: 'fill',
        ts,
        side,
        price: round(price),
        token_side: tokenSide,
        outcome: tokenSide === 1 ? outcome1 : outcome2,
        size_tokens: size,
        usd,
      });
    }
  }
  const endTs = startTs + duration;
  if (resolves) {
    const level = price >= 0.5 ? 1 : 0;
    push({ type: 'resolution', ts: endTs - 1, winner: level === 1 ? outcome1! : outcome2!, level });
  }
  push({ type: 'session', ts: endTs, state: 'stop' });
  const summary = tally.summary();
  return {
    tape: {
      ...base,
      wallet,
      name: `Watched ${hex(rng, 4)}`,
      condition_id: conditionId,
      title: `${outcome1 === 'Up' ? 'Bitcoin Up or Down' : 'Will it happen'} (recorded session ${index + 1})`,
      ...summary,
      started_at: startTs,
      ended_at: endTs,
      version: 1,
      partial: false,
    },
    events,
  };
}

/** A few sessions for an account, one per `spacingSeconds`, the last ending before `untilTs`. */
export function recordSessions(
  seed: number,
  accountId: string,
  count: number,
  untilTs: number,
  spacingSeconds = 3 * 3600,
): RecordedSession[] {
  return Array.from({ length: count }, (_, index) =>
    recordSession(seed, accountId, index, untilTs - (count - index) * spacingSeconds),
  );
}

/** Publishes the sessions: metadata first, then events (the live plane's order). */
export async function publishSessions(sink: EventSink, sessions: readonly RecordedSession[]): Promise<void> {
  await sink.publish(
    'tapes',
    sessions.map((session) => session.tape),
  );
  await sink.publish(
    'tapeEvents',
    sessions.flatMap((session) => session.events),
  );
}
