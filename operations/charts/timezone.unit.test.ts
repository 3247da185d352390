/**
 * The one time zone of a chart (common.js, shared by every template): which zone (the root's
 * data-time-zone, then the data's time_zone, then the zone the title names, else UTC), and the labels and
 * ticks in it. common.js is a browser script; it runs here in a bare V8 context (it touches no DOM at
 * load), so its functions are tested as the templates call them. Expected wall clocks are calendar facts
 * (EST is UTC−5, EDT UTC−4, DST begins on the second Sunday of March at 02:00 local).
 */
import { readFileSync } from 'node:fs';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';

interface Ticks {
  ticks: number[];
  step: number;
}
interface Common {
  titleZone(title: unknown): string | null;
  chartTimeZone(root: { getAttribute(name: string): string | null } | null, data: unknown): string;
  timeTicks(from: number, to: number, count: number, zone?: string): Ticks;
  timeLabel(ts: number, step: number, zone?: string): string;
  dateTimeLabel(ts: number, zone?: string): string;
  zoneLabel(from: number, to: number, zone: string): string;
}

const common = (() => {
  const context = vm.createContext({});
  vm.runInContext(readFileSync(new URL('./common.js', import.meta.url), 'utf8'), context);
  return context as unknown as Common;
})();

const NY = 'America/New_York';
const at = (iso: string) => Date.parse(iso) / 1000;
const root = (zone: string | null) => ({ getAttribute: (name: string) => (name === 'data-time-zone' ? zone : null) });
const market = (title: string) => ({ market: { title } });

describe('which zone a chart speaks', () => {
  it('the zone the title names after a clock time; none for titles without one', () => {
    expect(common.titleZone('Bitcoin Up or Down - January 4, 3:00PM-3:15PM ET')).toBe(NY);
    expect(common.titleZone('Bitcoin Up or Down - January 4, 10PM ET')).toBe(NY);
    expect(common.titleZone('Solana Up or Down - March 9, 9:00AM-9:05AM EDT')).toBe(NY);
    expect(common.titleZone('Giants vs. Dodgers, 7:10 PM PT')).toBe('America/Los_Angeles');
    expect(common.titleZone('Fed decision at 18:00 UTC?')).toBe('UTC');
    for (const title of [
      'Ducks vs. Wild',
      'Will ETH reach 5000 ETH/BTC?',
      'Ethereum above 3000 on June 1?',
      'pet 5 pt',
      '',
      null,
      undefined,
    ]) {
      expect(common.titleZone(title), String(title)).toBeNull();
    }
  });

  it('theme option (root data-time-zone) over the data (time_zone) over the title; UTC by default; unknown zones ignored', () => {
    const etTitle = market('Bitcoin Up or Down - January 4, 3:00PM-3:15PM ET');
    expect(common.chartTimeZone(root(null), etTitle)).toBe(NY);
    expect(common.chartTimeZone(root(null), market('Ducks vs. Wild'))).toBe('UTC');
    expect(common.chartTimeZone(root(null), { series: [] })).toBe('UTC');
    expect(common.chartTimeZone(null, null)).toBe('UTC');
    expect(common.chartTimeZone(root(null), { ...etTitle, time_zone: 'UTC' })).toBe('UTC');
    expect(common.chartTimeZone(root(null), { ...etTitle, time_zone: 'Europe/Paris' })).toBe('Europe/Paris');
    expect(common.chartTimeZone(root('Asia/Tokyo'), { ...etTitle, time_zone: 'Europe/Paris' })).toBe('Asia/Tokyo');
    expect(common.chartTimeZone(root('Mars/Olympus_Mons'), { ...etTitle, time_zone: 'Europe/Paris' })).toBe(
      'Europe/Paris',
    );
    expect(common.chartTimeZone(root(''), { ...etTitle, time_zone: 'Nowhere/Atlantis' })).toBe(NY);
    expect(common.chartTimeZone(root(null), { ...etTitle, time_zone: 42 })).toBe(NY);
  });
});

describe('labels and ticks in the zone', () => {
  const winter = at('2026-01-04T20:00:00Z'); // 15:00 EST
  const summer = at('2026-07-04T20:00:00Z'); // 16:00 EDT

  it('UTC labels are what they always were; ET labels read the Eastern wall clock, DST included', () => {
    expect(common.dateTimeLabel(winter)).toBe('2026-01-04 20:00:00 UTC');
    expect(common.dateTimeLabel(winter, 'UTC')).toBe('2026-01-04 20:00:00 UTC');
    expect(common.dateTimeLabel(winter, NY)).toBe('2026-01-04 15:00:00 EST');
    expect(common.dateTimeLabel(summer, NY)).toBe('2026-07-04 16:00:00 EDT');
    expect(common.timeLabel(winter + 75, 900)).toBe('20:01');
    expect(common.timeLabel(winter + 75, 900, NY)).toBe('15:01');
    expect(common.timeLabel(winter + 75, 30, NY)).toBe('15:01:15');
    // 22:00 EST on January 4 is already January 5 in UTC: a day tick names the zone's date.
    const lateEvening = at('2026-01-05T03:00:00Z');
    expect(common.timeLabel(lateEvening, 86_400)).toBe('Jan 5');
    expect(common.timeLabel(lateEvening, 86_400, NY)).toBe('Jan 4');
    expect(common.zoneLabel(winter, winter + 900, NY)).toBe('EST');
    expect(common.zoneLabel(summer, summer + 900, NY)).toBe('EDT');
    expect(common.zoneLabel(winter, winter + 900, 'UTC')).toBe('UTC');
  });

  it('UTC ticks are unchanged; sub-hour ticks fall on the same instants in ET; day ticks on the zone midnight', () => {
    const utc = common.timeTicks(winter + 7, winter + 3600, 4);
    expect(utc.step).toBe(900);
    expect(utc.ticks).toEqual([winter + 900, winter + 1800, winter + 2700, winter + 3600]);
    expect(common.timeTicks(winter + 7, winter + 3600, 4, NY)).toEqual(utc);
    expect(utc.ticks.map((t) => common.timeLabel(t, utc.step, NY))).toEqual(['15:15', '15:30', '15:45', '16:00']);

    const week = common.timeTicks(winter, winter + 6 * 86_400, 8, NY);
    expect(week.step).toBe(86_400);
    expect(week.ticks.length).toBeGreaterThanOrEqual(5);
    // Eastern midnight in January is 05:00 UTC.
    for (const tick of week.ticks) expect(new Date(tick * 1000).toISOString()).toMatch(/T05:00:00\.000Z$/);
    expect(week.ticks.map((t) => common.timeLabel(t, week.step, NY))).toEqual(
      ['Jan 5', 'Jan 6', 'Jan 7', 'Jan 8', 'Jan 9', 'Jan 10'].slice(0, week.ticks.length),
    );
  });

  it('across the spring-forward night the hourly ticks skip 02:00 and the label names both zones', () => {
    const from = at('2026-03-08T05:00:00Z'); // 00:00 EST
    const to = at('2026-03-08T10:00:00Z'); // 06:00 EDT
    const hourly = common.timeTicks(from, to, 6, NY);
    expect(hourly.step).toBe(3600);
    expect(hourly.ticks.map((t) => new Date(t * 1000).toISOString().slice(11, 16))).toEqual([
      '05:00',
      '06:00',
      '07:00',
      '08:00',
      '09:00',
      '10:00',
    ]);
    expect(hourly.ticks.map((t) => common.timeLabel(t, hourly.step, NY))).toEqual([
      '00:00',
      '01:00',
      '03:00',
      '04:00',
      '05:00',
      '06:00',
    ]);
    expect(common.zoneLabel(from, to, NY)).toBe('EST/EDT');
  });
});
