/**
 * The start time named in a market title. Polymarket's crypto Up/Down markets name their window in
 * Eastern Time without a year:
 *   "Bitcoin Up or Down - November 21, 3:15PM-3:30PM ET"   (a 5- or 15-minute window)
 *   "Bitcoin Up or Down - January 4, 10PM ET"               (an hourly window)
 * Charts anchor there when the caller gives no window, so the instant must be exact across DST.
 */

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
] as const;

export const MARKET_TIME_ZONE = 'America/New_York';

const TITLE_WINDOW =
  /\b(january|february|march|april|may|june|july|august|september|october|november|december)\s+(\d{1,2}),?\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)(?:\s*-\s*(\d{1,2})(?::(\d{2}))?\s*(am|pm))?\s+ET\b/i;

const easternParts = new Intl.DateTimeFormat('en-US', {
  timeZone: MARKET_TIME_ZONE,
  hourCycle: 'h23',
  year: 'numeric',
  month: 'numeric',
  day: 'numeric',
  hour: 'numeric',
  minute: 'numeric',
  second: 'numeric',
});

interface WallClock {
  year: number;
  month: number; // 1..12
  day: number;
  hour: number;
  minute: number;
}

function wallClockOf(epochSeconds: number): WallClock & { second: number } {
  const parts = Object.fromEntries(
    easternParts.formatToParts(new Date(epochSeconds * 1000)).map((part) => [part.type, part.value]),
  );
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    second: Number(parts.second),
  };
}

/** Eastern-time offset from UTC at an instant, in seconds (−18000 in winter, −14400 in summer). */
function easternOffsetSeconds(epochSeconds: number): number {
  const clock = wallClockOf(epochSeconds);
  const asUtc = Date.UTC(clock.year, clock.month - 1, clock.day, clock.hour, clock.minute, clock.second) / 1000;
  return asUtc - epochSeconds;
}

/** The instant at which Eastern wall-clock time reads `clock`. */
function easternWallClockToEpoch(clock: WallClock): number {
  const naive = Date.UTC(clock.year, clock.month - 1, clock.day, clock.hour, clock.minute) / 1000;
  let guess = naive - easternOffsetSeconds(naive);
  // A second pass settles instants near a DST change, where the offset at the guess differs.
  guess = naive - easternOffsetSeconds(guess);
  return guess;
}

/**
 * Every instant at which Eastern wall-clock time reads `clock`: one, or two in the hour repeated when
 * daylight saving time ends (1:00–1:59 AM on the first Sunday of November, once in EDT, then in EST).
 */
function easternInstantsOf(clock: WallClock): number[] {
  const instant = easternWallClockToEpoch(clock);
  const instants = [instant];
  for (const other of [instant - 3600, instant + 3600]) {
    const reads = wallClockOf(other);
    if (
      reads.year === clock.year &&
      reads.month === clock.month &&
      reads.day === clock.day &&
      reads.hour === clock.hour &&
      reads.minute === clock.minute
    )
      instants.push(other);
  }
  return instants.sort((a, b) => a - b);
}

function to24Hour(hour12: number, meridiem: string): number {
  const base = hour12 % 12;
  return meridiem.toLowerCase() === 'pm' ? base + 12 : base;
}

export interface TitleWindow {
  startTs: number;
  /** End of the named window; an hourly title ("10PM ET") names a one-hour window. */
  endTs: number;
}

/**
 * Parses the window named in a title. The title carries no year (nor which of the two 1 AM hours of the
 * night DST ends): the start closest to `referenceTs` (when the market was observed) is chosen, and the
 * end is the first instant after it that reads the end time. Returns null when the title names no time.
 */
export function parseTitleWindow(title: string, referenceTs: number): TitleWindow | null {
  const match = TITLE_WINDOW.exec(title);
  if (!match) return null;
  const [, monthName, dayText, startHourText, startMinuteText, startMeridiem, endHourText, endMinuteText, endMeridiem] =
    match;
  const month = MONTHS.indexOf(monthName!.toLowerCase() as (typeof MONTHS)[number]) + 1;
  const day = Number(dayText);
  const startHour12 = Number(startHourText);
  const startMinute = startMinuteText === undefined ? 0 : Number(startMinuteText);
  if (day < 1 || day > 31 || startHour12 < 1 || startHour12 > 12 || startMinute > 59) return null;
  const hour = to24Hour(startHour12, startMeridiem!);

  const referenceYear = wallClockOf(referenceTs).year;
  let best: number | null = null;
  for (const year of [referenceYear - 1, referenceYear, referenceYear + 1]) {
    // Reject dates that do not exist (February 30 rolls over in Date.UTC).
    const probe = new Date(Date.UTC(year, month - 1, day));
    if (probe.getUTCMonth() !== month - 1) continue;
    for (const candidate of easternInstantsOf({ year, month, day, hour, minute: startMinute })) {
      if (best === null || Math.abs(candidate - referenceTs) < Math.abs(best - referenceTs)) best = candidate;
    }
  }
  if (best === null) return null;

  if (endHourText === undefined) return { startTs: best, endTs: best + 3600 };
  const endHour12 = Number(endHourText);
  const endMinute = endMinuteText === undefined ? 0 : Number(endMinuteText);
  if (endHour12 < 1 || endHour12 > 12 || endMinute > 59) return null;
  const endHour = to24Hour(endHour12, endMeridiem!);
  const startDate = wallClockOf(best);
  // A window that crosses midnight ("11:45PM-12:00AM") ends on the next day.
  const crossesMidnight = endHour * 60 + endMinute <= hour * 60 + startMinute;
  const endDate = new Date(Date.UTC(startDate.year, startDate.month - 1, startDate.day + (crossesMidnight ? 1 : 0)));
  // Through the wall clock, not by adding minutes: a window across a DST change is shorter or longer.
  const ends = easternInstantsOf({
    year: endDate.getUTCFullYear(),
    month: endDate.getUTCMonth() + 1,
    day: endDate.getUTCDate(),
    hour: endHour,
    minute: endMinute,
  });
  const start = best;
  return { startTs: start, endTs: ends.find((end) => end > start) ?? ends.at(-1)! };
}

function formatClock(clock: WallClock, withMinutes: boolean): string {
  const meridiem = clock.hour >= 12 ? 'PM' : 'AM';
  const hour12 = clock.hour % 12 === 0 ? 12 : clock.hour % 12;
  return withMinutes ? `${hour12}:${String(clock.minute).padStart(2, '0')}${meridiem}` : `${hour12}${meridiem}`;
}

function monthTitle(month: number): string {
  const name = MONTHS[month - 1]!;
  return name.charAt(0).toUpperCase() + name.slice(1);
}

/**
 * Formats a window the way Polymarket titles do: "November 21, 3:15PM-3:30PM ET" for sub-hour windows,
 * "November 21, 3PM ET" for an hour starting on the hour.
 */
export function formatTitleWindow(startTs: number, endTs: number): string {
  const start = wallClockOf(startTs);
  const date = `${monthTitle(start.month)} ${start.day}`;
  if (endTs - startTs === 3600 && start.minute === 0) return `${date}, ${formatClock(start, false)} ET`;
  return `${date}, ${formatClock(start, true)}-${formatClock(wallClockOf(endTs), true)} ET`;
}
