/** The live plane's commands as the server reads them: what is a command, and what a bad message says. */
import { describe, expect, it } from 'vitest';
import { parseClientMessage, RESUMED_AT_MOST, serverMessageSchema } from './messages.ts';

const MARKET = `0x${'ab'.repeat(32)}`;

describe('parseClientMessage', () => {
  it('reads every command', () => {
    for (const message of [
      { type: 'watch', id: 'a', trader: '0xabc', market: MARKET },
      { type: 'unwatch', trader: 'name', market: MARKET },
      { type: 'follow', trader: 'name' },
      { type: 'unfollow', trader: 'name' },
      { type: 'popular' },
      { type: 'unpopular' },
      { type: 'ping', id: 'p' },
    ])
      expect(parseClientMessage(JSON.stringify(message))).toEqual({ ok: true, message });
  });

  it('ignores fields it does not know (a newer client stays understood)', () => {
    expect(parseClientMessage(JSON.stringify({ type: 'ping', since: 'v2' }))).toEqual({
      ok: true,
      message: { type: 'ping' },
    });
  });

  it('says what is wrong, and keeps the id of a command it cannot read', () => {
    expect(parseClientMessage('{')).toEqual({ ok: false, reason: 'the message is not JSON' });
    const missing = parseClientMessage(JSON.stringify({ type: 'watch', id: 'w1', trader: 'x' }));
    expect(missing).toMatchObject({ ok: false, id: 'w1' });
    expect(missing.ok ? '' : missing.reason).toContain('market');
    expect(parseClientMessage(JSON.stringify({ type: 'dance' }))).toMatchObject({ ok: false });
    expect(parseClientMessage('[]')).toMatchObject({ ok: false });
  });

  it('reads a resume of head refs, and refuses what is not one or too many at once', () => {
    const ref = `70123456:${'ab12'.repeat(4)}:3`;
    expect(parseClientMessage(JSON.stringify({ type: 'resume', id: 'r', refs: [ref] }))).toEqual({
      ok: true,
      message: { type: 'resume', id: 'r', refs: [ref] },
    });
    for (const refs of [[], ['70123456:ab12:3'], [`x:${'ab12'.repeat(4)}:3`], Array(RESUMED_AT_MOST + 1).fill(ref)])
      expect(parseClientMessage(JSON.stringify({ type: 'resume', id: 'r', refs }))).toMatchObject({
        ok: false,
        id: 'r',
      });
  });
});

describe('serverMessageSchema', () => {
  it('holds an event with its StreamEvent, and an error with extra fields', () => {
    expect(
      serverMessageSchema.safeParse({
        type: 'event',
        market: MARKET,
        wallet: '0xabc',
        seq: 1,
        event: { type: 'book', ts: 1, bid: 0.4, ask: null },
      }).success,
    ).toBe(true);
    expect(
      serverMessageSchema.safeParse({
        type: 'error',
        code: 'no_free_slot',
        message: 'm',
        slots_in_use: 1,
        live_slots: 1,
      }).success,
    ).toBe(true);
    expect(
      serverMessageSchema.safeParse({ type: 'event', market: MARKET, wallet: '0xabc', seq: 0, event: {} }).success,
    ).toBe(false);
    // The bounds' refusals (docs/live.md, Bounds) carry their numbers.
    expect(
      serverMessageSchema.safeParse({
        type: 'error',
        code: 'lookup_limit',
        message: 'm',
        retry_after: 30,
        lookups_per_hour: 120,
      }).success,
    ).toBe(true);
    expect(serverMessageSchema.safeParse({ type: 'resolved', ref: 'r', state: 'retracted', ts: 1 }).success).toBe(true);
    expect(serverMessageSchema.safeParse({ type: 'resolved', ref: 'r', state: 'open', ts: 1 }).success).toBe(false);
    for (const code of ['rate_limited', 'overloaded', 'plan_changed', 'too_many_refs'])
      expect(serverMessageSchema.safeParse({ type: 'error', code, message: 'm' }).success).toBe(true);
    expect(
      serverMessageSchema.safeParse({ type: 'error', code: 'lookup_limit', message: 'm', retry_after: 'soon' }).success,
    ).toBe(false);
  });
});
