/** The demo recorder: deterministic, valid per the contract, counts that match the events. */
import { describe, expect, it } from 'vitest';
import { TOPICS } from '../../contract/topics.ts';
import { recordSessions } from './tapes.ts';

describe('recorded sessions of the demo world', () => {
  const sessions = recordSessions(7, 'demo-pro', 3, 1_767_556_800);

  it('are deterministic', () => {
    expect(recordSessions(7, 'demo-pro', 3, 1_767_556_800)).toEqual(sessions);
    expect(recordSessions(8, 'demo-pro', 3, 1_767_556_800)[0]!.tape.tape_id).not.toBe(sessions[0]!.tape.tape_id);
    expect(recordSessions(7, 'demo-max', 3, 1_767_556_800)[0]!.tape.tape_id).not.toBe(sessions[0]!.tape.tape_id);
  });

  it('validate against the contract, with counts, order and bounds that match their events', () => {
    for (const { tape, events } of sessions) {
      expect(TOPICS.tapes.schema.safeParse(tape).success).toBe(true);
      for (const event of events)
        expect(TOPICS.tapeEvents.schema.safeParse(event).success, JSON.stringify(event)).toBe(true);
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
      expect(events.length).toBe(tape.event_count);
      expect(events.filter((event) => event.type === 'fill')).toHaveLength(tape.fill_count);
      expect(events.filter((event) => event.type === 'book' || event.type === 'trade')).toHaveLength(tape.tick_count);
      expect(events[0]).toMatchObject({ type: 'session', state: 'start', ts: tape.started_at });
      expect(events.at(-1)).toMatchObject({ type: 'session', state: 'stop', ts: tape.ended_at });
      expect(new Set(events.map((event) => event.account_id))).toEqual(new Set([tape.account_id]));
      for (let index = 1; index < events.length; index++)
        expect(events[index]!.ts).toBeGreaterThanOrEqual(events[index - 1]!.ts);
    }
  });
});
