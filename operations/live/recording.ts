/**
 * Recordings of live watches (docs/live.md, Recordings): a Pro or Max watch is saved as a tape, the
 * StreamEvents its client was sent, in order, with the metadata every tape carries (the shared rules of
 * projections/tape-tally.ts). The plane never imports the log: the role hands it a `RecordingSink`.
 *
 * A recording is published as it goes (its waiting events, then its metadata so far, flagged partial),
 * so a crash of the instance loses at most the events still waiting; the last version, published when
 * the watch ends, is flagged whole, unless a part of it could not be published: then it stays partial.
 *
 * The library's limit: each user's tapes in the store (the recordings this instance runs left out) plus
 * the bytes of the recordings this instance runs for the user. A recording that would pass the limit
 * stops before the event that would (the watch goes on, unrecorded).
 *
 * The backlog: the events the log has not taken yet, over all recordings of the instance. A stalled log
 * must not grow it without bound: past `maxUnpublishedBytes` the recordings stop the same way, and no new
 * one starts, until the log has taken it down to half.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../log.ts';
import { readLibraryUsage } from '../../projections/tapes.ts';
import { TapeTally, type TapeSummary } from '../../projections/tape-tally.ts';
import type { Store } from '../../projections/store.ts';
import { liveRecordingBytes, liveRecordings } from '../../metrics/registry.ts';
import type { StreamEvent } from './messages.ts';
import type { RecordingSink as RecordingSinkOf } from '../../live-input.ts';

/** A recording's metadata as the `tapes` topic carries it. */
interface TapeMetadata extends TapeSummary {
  tape_id: string;
  account_id: string;
  wallet: string;
  name: string;
  condition_id: string;
  title: string;
  started_at: number;
  ended_at: number;
  version: number;
  partial: boolean;
}

/** One event of a recording as the `tape.events` topic carries it: the StreamEvent, its tape and its position. */
export type TapeEventRecord = StreamEvent & { tape_id: string; account_id: string; seq: number };

/**
 * Where recordings go (the role publishes them on the log): `publish` puts a recording's next events, then
 * its metadata so far, on the log, and resolves once both are.
 */
export type RecordingSink = RecordingSinkOf<TapeMetadata, TapeEventRecord>;

export interface RecordingSettings {
  flushEvents: number;
  flushMs: number;
  maxUnpublishedBytes: number;
}

/** The bytes of recorded events the log has not taken yet, over every recording of one plane. */
class Backlog {
  bytes = 0;
  /** Past the bound, and not yet drained to half of it. */
  backedUp = false;

  constructor(
    private readonly maxBytes: number,
    private readonly log: Logger,
  ) {}

  /** Whether `bytes` more may wait; once refused, none may until the backlog is down to half the bound. */
  admits(bytes: number): boolean {
    this.#catchUp();
    if (!this.backedUp && this.bytes + bytes > this.maxBytes) {
      this.backedUp = true;
      this.log.warn(
        { unpublishedBytes: this.bytes, maxBytes: this.maxBytes },
        'the log takes recordings slower than they come: recordings stop until it catches up',
      );
    }
    return !this.backedUp;
  }

  add(bytes: number): void {
    this.bytes += bytes;
  }

  taken(bytes: number): void {
    this.bytes -= bytes;
    this.#catchUp();
  }

  #catchUp(): void {
    if (this.backedUp && this.bytes <= this.maxBytes / 2) {
      this.backedUp = false;
      this.log.info({ unpublishedBytes: this.bytes }, 'the log caught up with the recordings: recording again');
    }
  }
}

interface RecordingSubject {
  accountId: string;
  wallet: string;
  name: string;
  market: string;
  title: string;
}

export class Recording {
  readonly tapeId = `tape_${randomUUID().replaceAll('-', '')}`;
  readonly #tally = new TapeTally();
  readonly #startedAt: number;
  #waiting: TapeEventRecord[] = [];
  #waitingBytes = 0;
  #version = 0;
  #publishing: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;
  /** A part could not be published: the tape can never be whole. */
  #lost = false;
  #ended: Promise<void> | null = null;

  constructor(
    private readonly subject: RecordingSubject,
    private readonly sink: RecordingSink,
    private readonly backlog: Backlog,
    private readonly settings: RecordingSettings,
    private readonly now: () => number,
    private readonly log: Logger,
  ) {
    this.#startedAt = now();
  }

  get accountId(): string {
    return this.subject.accountId;
  }

  get bytes(): number {
    return this.#tally.bytes;
  }

  get ended(): boolean {
    return this.#ended !== null;
  }

  /** One more event the client was sent (`bytes`: its line in the library, tapeEventBytes). */
  add(event: StreamEvent, bytes: number): void {
    if (this.#ended) return;
    const seq = this.#tally.events;
    this.#tally.add(event, bytes);
    this.#waitingBytes += bytes;
    this.backlog.add(bytes);
    this.#waiting.push({ ...event, tape_id: this.tapeId, account_id: this.subject.accountId, seq });
    if (this.#waiting.length >= this.settings.flushEvents) void this.#flush(true);
    else if (this.#timer === null) {
      this.#timer = setTimeout(() => void this.#flush(true), this.settings.flushMs);
      this.#timer.unref();
    }
  }

  /** Saves the recording: what waits, then its last metadata (whole, unless a part was lost). Idempotent. */
  end(): Promise<void> {
    // A recording that never got an event (its connection left while it started) is no tape.
    if (this.#tally.events === 0) this.#ended ??= Promise.resolve();
    this.#ended ??= this.#flush(false).then(() => {
      liveRecordings.inc({ outcome: this.#lost ? 'partial' : 'whole' });
      liveRecordingBytes.observe(this.#tally.bytes);
    });
    return this.#ended;
  }

  #flush(running: boolean): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const events = this.#waiting.splice(0);
    const eventBytes = this.#waitingBytes;
    this.#waitingBytes = 0;
    // The metadata counts exactly the events published with it and before it.
    const summary = this.#tally.summary();
    const endedAt = this.now();
    const version = ++this.#version;
    this.#publishing = this.#publishing.then(async () => {
      const tape: TapeMetadata = {
        tape_id: this.tapeId,
        account_id: this.subject.accountId,
        wallet: this.subject.wallet,
        name: this.subject.name,
        condition_id: this.subject.market,
        title: this.subject.title,
        ...summary,
        started_at: this.#startedAt,
        ended_at: Math.max(this.#startedAt, endedAt),
        version,
        partial: running || this.#lost,
      };
      try {
        await this.sink.publish(tape, events);
      } catch (failure) {
        this.#lost = true;
        this.log.error({ err: failure, tapeId: this.tapeId, events: events.length }, 'a part of a recording was lost');
      } finally {
        this.backlog.taken(eventBytes);
      }
    });
    return this.#publishing;
  }
}

/** What this instance knows of one user's library: the stored tapes' bytes, and the recordings it runs. */
interface LibraryLedger {
  storedBytes: number;
  open: Set<Recording>;
}

export type RecordingRefusal = 'plan' | 'library_full' | 'unavailable';

/** The recordings of one plane: who may record, how full each library is, and where recordings go. */
export class Recorder {
  readonly #ledgers = new Map<string, LibraryLedger>();
  readonly #backlog: Backlog;

  constructor(
    private readonly sink: RecordingSink | null,
    private readonly store: Store,
    private readonly settings: RecordingSettings,
    private readonly now: () => number,
    private readonly log: Logger,
  ) {
    this.#backlog = new Backlog(settings.maxUnpublishedBytes, log);
  }

  /** Bytes of a user's library in use, as far as this instance knows (the stored tapes and its own recordings). */
  #usedBytes(ledger: LibraryLedger): number {
    let bytes = ledger.storedBytes;
    for (const recording of ledger.open) bytes += recording.bytes;
    return bytes;
  }

  /** A recording of a watch, or why there is none. */
  async start(
    subject: RecordingSubject,
    plan: { recordsLive: boolean; libraryBytes: number },
  ): Promise<{ recording: Recording } | { refused: RecordingRefusal; usedBytes?: number }> {
    if (!plan.recordsLive) return this.#refuse('plan');
    if (this.sink === null || !this.#backlog.admits(0)) return this.#refuse('unavailable');
    let ledger = this.#ledgers.get(subject.accountId);
    const open = ledger ? [...ledger.open].map((recording) => recording.tapeId) : [];
    try {
      const stored = await readLibraryUsage(this.store, subject.accountId, open);
      ledger = this.#ledgers.get(subject.accountId);
      if (ledger) ledger.storedBytes = stored.bytes;
      else this.#ledgers.set(subject.accountId, (ledger = { storedBytes: stored.bytes, open: new Set() }));
    } catch (failure) {
      // Without the store's figure the limit is checked against what this instance knew: a recording is
      // worth more than an exact limit for a moment.
      this.log.warn({ err: failure }, 'library usage unavailable: recording against the last known figure');
      ledger = this.#ledgers.get(subject.accountId);
      if (!ledger) this.#ledgers.set(subject.accountId, (ledger = { storedBytes: 0, open: new Set() }));
    }
    const usedBytes = this.#usedBytes(ledger);
    if (usedBytes >= plan.libraryBytes) return this.#refuse('library_full', usedBytes);
    const recording = new Recording(subject, this.sink, this.#backlog, this.settings, this.now, this.log);
    ledger.open.add(recording);
    return { recording };
  }

  #refuse(reason: RecordingRefusal, usedBytes?: number): { refused: RecordingRefusal; usedBytes?: number } {
    liveRecordings.inc({ outcome: reason });
    return usedBytes === undefined ? { refused: reason } : { refused: reason, usedBytes };
  }

  /** Whether an event of `bytes` (tapeEventBytes) goes into the recording, or why the recording stops before it. */
  admits(recording: Recording, bytes: number, libraryBytes: number): 'admitted' | 'library_full' | 'unavailable' {
    const ledger = this.#ledgers.get(recording.accountId);
    if (ledger && this.#usedBytes(ledger) + bytes > libraryBytes) return 'library_full';
    return this.#backlog.admits(bytes) ? 'admitted' : 'unavailable';
  }

  /** Ends a recording (saving it); its bytes count as stored from now on. */
  async end(recording: Recording): Promise<void> {
    const saved = recording.end();
    const ledger = this.#ledgers.get(recording.accountId);
    if (ledger?.open.delete(recording)) {
      ledger.storedBytes += recording.bytes;
      // Forgotten when nothing runs: the next recording reads the store again.
      if (ledger.open.size === 0) this.#ledgers.delete(recording.accountId);
    }
    await saved;
  }
}
