/**
 * Every Prometheus metric of the service, defined once, on one registry that every role exposes at
 * `/metrics` (on the HTTP port of the `api` and `all` roles, on METRICS_PORT for the worker roles).
 *
 * This module is the shared place of the instrumentation: `api/`, `ingest/`, `projections/` and the
 * sources import from here (and never from each other). Names follow Prometheus conventions
 * (`trader_analytics_` prefix, base units, `_total` counters, `_seconds` durations); label values come
 * from small fixed sets (route templates, topic names of the contract, error codes, read function names,
 * partition numbers), never a wallet, a key, an account or a raw URL.
 *
 * Sources (the archive indexer, the upstream poller) record their progress through the definitions
 * under "Sources" below; nothing else has to be registered for the dashboard and the alerts to see them.
 */
import { LRUCache } from 'lru-cache';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const metricsRegistry = new Registry();

// Process and Node runtime: CPU, resident memory, open fds, event-loop lag, GC, heap (prom-client's set).
collectDefaultMetrics({ register: metricsRegistry });

const registers = [metricsRegistry];

/** Durations from sub-millisecond reads to slow rollups. */
const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

// ── Agreement with the provider (api, all) ─────────────────────────────────────────────────────────
/** Upper bounds of the gap ratios counted: agreement, a rounding, a few percent, a quarter, any. */
const GAP_RATIO_BOUNDS = ['0.001', '0.01', '0.05', '0.25', '+Inf'] as const;

/** The latest gap ratio of each wallet whose card was served (a day at most, the most recent wallets kept). */
const gapRatios = new LRUCache<string, number>({ max: 10_000, ttl: 86_400_000 });

/** A card's reconciliation served for `wallet` now: its gap ratio (null: the provider states 0) joins the distribution. */
export function noteReconciliation(wallet: string, gapRatio: number | null): void {
  if (gapRatio === null) gapRatios.delete(wallet);
  else gapRatios.set(wallet, gapRatio);
}

new Gauge({
  name: 'trader_analytics_reconciliation_wallets',
  help: "Wallets whose card was served in the last day, by how far this service's pnl is from the provider's: gap_ratio at most gap_ratio_le (cumulative, like a histogram's buckets; docs/upstream.md).",
  labelNames: ['gap_ratio_le'] as const,
  registers,
  collect() {
    const ratios = [...gapRatios.values()];
    for (const bound of GAP_RATIO_BOUNDS)
      this.set({ gap_ratio_le: bound }, ratios.filter((ratio) => ratio <= Number(bound)).length);
  },
});

// ── HTTP (api, all) ─────────────────────────────────────────────────────────────────────────────────
/** Request latency by method, route template and status: registered per app by fastify-metrics (see http.ts). */
export const HTTP_REQUEST_DURATION = 'trader_analytics_http_request_duration_seconds';

export const gateDecisions = new Counter({
  name: 'trader_analytics_gate_decisions_total',
  help: 'Calls through the gates by outcome: admitted, unmetered (gate store unavailable) or the refusal code (rate_limited, busy, daily_limit, monthly_limit, wallet_quota, too_many_auth_failures).',
  labelNames: ['outcome'] as const,
  registers,
});

export const authFailures = new Counter({
  name: 'trader_analytics_auth_failures_total',
  help: 'Failed authentications (401), and those answered 429 because the address is blocked.',
  labelNames: ['outcome'] as const,
  registers,
});

export const heavyReadsInFlight = new Gauge({
  name: 'trader_analytics_heavy_reads_in_flight',
  help: 'Heavy reads (raw ticks, full tapes, tape events) holding a slot of this instance’s admission lane.',
  registers,
});

export const heavyReadsCapacity = new Gauge({
  name: 'trader_analytics_heavy_reads_capacity',
  help: 'Slots of this instance’s admission lane (HEAVY_READS_PER_INSTANCE).',
  registers,
});

// ── Live plane (all) ────────────────────────────────────────────────────────────────────────────────
export const liveConnections = new Gauge({
  name: 'trader_analytics_live_connections',
  help: 'Authenticated WebSocket connections of the live plane open on this instance.',
  registers,
});

export const liveSubscriptions = new Gauge({
  name: 'trader_analytics_live_subscriptions',
  help: 'Subscriptions held on this instance by kind (watch: one live slot each; follow).',
  labelNames: ['kind'] as const,
  registers,
});

export const liveEventsSent = new Counter({
  name: 'trader_analytics_live_events_sent_total',
  help: 'StreamEvents sent to live clients, by type.',
  labelNames: ['type'] as const,
  registers,
});

export const liveCommands = new Counter({
  name: 'trader_analytics_live_commands_total',
  help: 'Commands of live clients by command and outcome (ok, or the error code: no_free_slot, bad_message…).',
  labelNames: ['command', 'outcome'] as const,
  registers,
});

export const liveDisconnects = new Counter({
  name: 'trader_analytics_live_disconnects_total',
  help: 'Live connections ended, by reason (client, or the error code the server closed with: too_slow, no_pong, unauthorized…).',
  labelNames: ['reason'] as const,
  registers,
});

export const logMessagesSkipped = new Counter({
  name: 'trader_analytics_log_skipped_messages_total',
  help: 'Messages of the in-process log the live plane never read: dropped to keep the log within its bound while the plane had fallen behind.',
  labelNames: ['topic'] as const,
  registers,
});

export const liveRecordings = new Counter({
  name: 'trader_analytics_live_recordings_total',
  help: 'Recordings of live watches ended, by how they were saved (whole, partial) or why none was made (plan, library_full, unavailable).',
  labelNames: ['outcome'] as const,
  registers,
});

export const liveRecordingBytes = new Histogram({
  name: 'trader_analytics_live_recording_bytes',
  help: "Sizes of saved recordings: their events' bytes as the download's JSON lines.",
  buckets: [1e3, 1e4, 1e5, 1e6, 1e7, 1e8],
  registers,
});

// ── Store ───────────────────────────────────────────────────────────────────────────────────────────
export const storeQueryDuration = new Histogram({
  name: 'trader_analytics_store_query_duration_seconds',
  help: 'ClickHouse query latency by read function (the projections function that issued it) and outcome (ok, error, timeout).',
  labelNames: ['read', 'outcome'] as const,
  buckets: SECONDS_BUCKETS,
  registers,
});

export const readCacheLookups = new Counter({
  name: 'trader_analytics_read_cache_lookups_total',
  help: 'Lookups in the read cache, by answer kind (operations/reads.ts: wallet_markets, fills, summary, trader_name, …) and outcome (hit, miss).',
  labelNames: ['cache', 'outcome'] as const,
  registers,
});

// ── Ingest ──────────────────────────────────────────────────────────────────────────────────────────
export const ingestEvents = new Counter({
  name: 'trader_analytics_ingest_events_total',
  help: 'Valid events written to ClickHouse and committed, by source topic (rate() gives events/s).',
  labelNames: ['topic'] as const,
  registers,
});

export const ingestBatchEvents = new Histogram({
  name: 'trader_analytics_ingest_batch_events',
  help: 'Messages per write (one write gathers slices of several partitions).',
  buckets: [1, 10, 100, 500, 1000, 2500, 5000, 10_000, 20_000, 50_000],
  registers,
});

export const ingestInsertDuration = new Histogram({
  name: 'trader_analytics_ingest_insert_duration_seconds',
  help: 'Time of one landing-table insert of a write (retries included), by table.',
  labelNames: ['table'] as const,
  buckets: SECONDS_BUCKETS,
  registers,
});

export const ingestWriteDuration = new Histogram({
  name: 'trader_analytics_ingest_write_duration_seconds',
  help: 'Time of one whole write (every insert, staging and dead letters) before its offsets are committed.',
  buckets: SECONDS_BUCKETS,
  registers,
});

export const ingestWriteRetries = new Counter({
  name: 'trader_analytics_ingest_write_retries_total',
  help: 'ClickHouse writes retried after a failure (bounded retries; then the consumer restarts from its committed offsets).',
  registers,
});

export const ingestLastCommit = new Gauge({
  name: 'trader_analytics_ingest_last_commit_timestamp_seconds',
  help: 'Unix time of the last offsets committed by this worker (ingest stalls when it stops moving while lag grows).',
  registers,
});

export const consumerLag = new Gauge({
  name: 'trader_analytics_ingest_consumer_lag_messages',
  help: 'Messages of an assigned partition not yet committed by this worker: the partition’s high watermark minus the committed offset.',
  labelNames: ['topic', 'partition'] as const,
  registers,
});

export const deadLetters = new Counter({
  name: 'trader_analytics_dead_letters_total',
  help: 'Events sent to the dead-letter topic, by source topic and reason class (design rule 3: none is silently lost).',
  labelNames: ['topic', 'reason'] as const,
  registers,
});

export const rollupRefreshDuration = new Histogram({
  name: 'trader_analytics_rollup_refresh_duration_seconds',
  help: 'Time of one rollup recomputation (trader_markets, careers, tape changes, whale accumulations) for the batches staged since the last.',
  labelNames: ['outcome'] as const,
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers,
});

export const rollupPendingBatches = new Gauge({
  name: 'trader_analytics_rollup_pending_batches',
  help: 'Staged batches whose rollups this worker has not recomputed yet.',
  registers,
});

// ── Sources ─────────────────────────────────────────────────────────────────────────────────────────
export const sourceEventsPublished = new Counter({
  name: 'trader_analytics_source_events_published_total',
  help: 'Events a source process published to the log, by topic.',
  labelNames: ['topic'] as const,
  registers,
});

/** The archive indexer: how far behind the chain head it reads. */
const archiveHeadBlock = new Gauge({
  name: 'trader_analytics_archive_head_block',
  help: 'Latest block number the archive source sees on chain.',
  registers,
});

const archiveIndexedBlock = new Gauge({
  name: 'trader_analytics_archive_indexed_block',
  help: 'Last block whose events the archive source has published.',
  registers,
});

const archiveBlockLag = new Gauge({
  name: 'trader_analytics_archive_block_lag_blocks',
  help: 'Blocks between the chain head and the last block the archive source published.',
  registers,
});

export const archiveReorgs = new Counter({
  name: 'trader_analytics_archive_reorgs_detected_total',
  help: 'Reorgs that replaced blocks the archive source had already published (deeper than its confirmations); the archive stops on each.',
  registers,
});

const archiveFinality = new Gauge({
  name: 'trader_analytics_archive_finality',
  help: 'How the archive decides a block is final: 1 on mode="finalized" (the node\'s finalized tag) or mode="confirmations" (a depth: the node lacks the tag, or ARCHIVE_FINALIZED=false).',
  labelNames: ['mode'] as const,
  registers,
});

/** Freshness: how far behind the chain's head and its finalized block the archive reads. */
const archiveHeadLagSeconds = new Gauge({
  name: 'trader_analytics_archive_head_lag_seconds',
  help: "Seconds between now and the time of the newest block the head stage has read (provisional events): the lag behind the chain's head.",
  registers,
});

const archiveFinalizedLagSeconds = new Gauge({
  name: 'trader_analytics_archive_finalized_lag_seconds',
  help: 'Seconds between now and the time of the newest block whose final facts the archive has published: the lag behind finality (plus finality itself).',
  registers,
});

const archiveHeadLagBlocks = new Gauge({
  name: 'trader_analytics_archive_finalized_lag_blocks',
  help: "Blocks between the node's finalized block and the last block whose final facts the archive has published.",
  registers,
});

/** Seconds from a block's time to a stage, per stage (published, ingested, sent to a watcher). */
const freshnessSeconds = new Histogram({
  name: 'trader_analytics_freshness_seconds',
  help: "Seconds from a block's time (its timestamp) to a stage: stage=published (the archive put its event on the log), ingested (a fill landed in the store, fills of the last 10 minutes), sent (the live plane sent it to a watcher); kind=provisional or final.",
  labelNames: ['stage', 'kind'] as const,
  buckets: [0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 120, 300],
  registers,
});

export const headReorgs = new Counter({
  name: 'trader_analytics_archive_head_reorgs_total',
  help: 'Reorgs the head stage saw above the final block: the provisional events of the replaced blocks were retracted.',
  registers,
});

export const headMarks = new Counter({
  name: 'trader_analytics_archive_head_marks_total',
  help: 'Resolution marks the head stage published for blocks of provisional events, by state (final, retracted).',
  labelNames: ['state'] as const,
  registers,
});

/** Records how the archive decides finality (one mode is 1, the other 0). */
export function recordArchiveFinality(mode: 'finalized' | 'confirmations'): void {
  archiveFinality.set({ mode }, 1);
  archiveFinality.set({ mode: mode === 'finalized' ? 'confirmations' : 'finalized' }, 0);
}

/** The head stage read a block of this time (epoch seconds). */
export function recordHeadBlock(blockTs: number, nowMs = Date.now()): void {
  archiveHeadLagSeconds.set(Math.max(0, nowMs / 1000 - blockTs));
}

/** The final stage published up to a block of this time, `blocksBehind` below the node's finalized block. */
export function recordFinalizedLag(blockTs: number | null, blocksBehind: number, nowMs = Date.now()): void {
  if (blockTs !== null) archiveFinalizedLagSeconds.set(Math.max(0, nowMs / 1000 - blockTs));
  archiveHeadLagBlocks.set(Math.max(0, blocksBehind));
}

/** One event reached a stage: seconds since its block's time. */
export function recordFreshness(
  stage: 'published' | 'ingested' | 'sent',
  kind: 'provisional' | 'final',
  blockTs: number,
  nowMs = Date.now(),
): void {
  freshnessSeconds.observe({ stage, kind }, Math.max(0, nowMs / 1000 - blockTs));
}

/** The upstream poller: per endpoint of the provider's API (a fixed set named by the source). */
const upstreamPolls = new Counter({
  name: 'trader_analytics_upstream_polls_total',
  help: 'Polls of the upstream provider, by endpoint and outcome (ok, error).',
  labelNames: ['endpoint', 'outcome'] as const,
  registers,
});

const upstreamPollErrors = new Counter({
  name: 'trader_analytics_upstream_poll_errors_total',
  help: 'Failed polls of the upstream provider, by endpoint and error class (http_4xx, http_5xx, timeout, network, parse).',
  labelNames: ['endpoint', 'error'] as const,
  registers,
});

const upstreamLastSuccess = new Gauge({
  name: 'trader_analytics_upstream_last_success_timestamp_seconds',
  help: 'Unix time of the last successful poll, by endpoint (staleness = time() minus this).',
  labelNames: ['endpoint'] as const,
  registers,
});

/** The clob source: the market channel's frames, its reconnects, and what it subscribes. */
export const clobMessages = new Counter({
  name: 'trader_analytics_clob_messages_total',
  help: 'Market-channel messages the clob source read, by outcome: used, ignored (kinds it does not use), rejected (dead-lettered); dropped counts events not published because the log fell behind; untracked counts book entries and prints of tokens no longer subscribed.',
  labelNames: ['outcome'] as const,
  registers,
});

export const clobReconnects = new Counter({
  name: 'trader_analytics_clob_reconnects_total',
  help: 'Market-channel sockets the clob source replaced, by reason: closed, error, heartbeat (no PONG), stalled (PONGs but no data).',
  labelNames: ['reason'] as const,
  registers,
});

export const clobSubscribedMarkets = new Gauge({
  name: 'trader_analytics_clob_subscribed_markets',
  help: 'Markets the clob source keeps subscribed (watched on the live plane, or open markets of the popular shelf).',
  registers,
});

/** Records one upstream poll: a source calls this after each request to the provider. */
export function recordUpstreamPoll(endpoint: string, error: string | null, nowSeconds = Date.now() / 1000): void {
  if (error === null) {
    upstreamPolls.inc({ endpoint, outcome: 'ok' });
    upstreamLastSuccess.set({ endpoint }, nowSeconds);
  } else {
    upstreamPolls.inc({ endpoint, outcome: 'error' });
    upstreamPollErrors.inc({ endpoint, error });
  }
}

/** Records a reorg below the archive's checkpoint (it stops; an operator decides). */
export function recordArchiveReorg(): void {
  archiveReorgs.inc();
}

/** Records the archive's progress: a source calls this after publishing up to `indexedBlock`. */
export function recordArchiveProgress(headBlock: number, indexedBlock: number): void {
  archiveHeadBlock.set(headBlock);
  archiveIndexedBlock.set(indexedBlock);
  archiveBlockLag.set(Math.max(0, headBlock - indexedBlock));
}

/** The exposition of every metric of this process (plus any extra per-app registries). */
export async function exposition(extra: readonly Registry[] = []): Promise<{ contentType: string; body: string }> {
  const merged = extra.length === 0 ? metricsRegistry : Registry.merge([metricsRegistry, ...extra]);
  return { contentType: merged.contentType, body: await merged.metrics() };
}
