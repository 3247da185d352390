/**
 * The read API over a test store: `startTestApi` builds the app (no listening socket; tests use
 * `inject`) on a config whose store is the test's own database, with one account and key per plan.
 * Every response a test sees can be checked against the service's own /openapi.json with
 * `OpenApiResponses` (Ajv, JSON Schema 2020-12, as OpenAPI 3.1 prescribes).
 */
import { gunzipSync } from 'node:zlib';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Config, ConfigOverrides, PlanId } from '../../config.ts';
import { buildHttpServer } from '../../roles/http-server.ts';
import type { InFlightLimiter } from '../../operations/gates/in-flight.ts';
import type { GateStore } from '../../operations/gates/store.ts';
import { MemorySlots, type SlotStore } from '../../operations/gates/slots.ts';
import type { WalletRequestLog } from '../../operations/wallet-requests.ts';
import { withPublisher } from '../../roles/runtime.ts';
import { publishAccount, publishNewKey } from '../../ingest/sources/accounts.ts';
import type { EventSink } from '../../ingest/publisher.ts';
import { createLogger, type Logger } from '../../log.ts';
import { openStore, type Store } from '../../projections/store.ts';
import { PROCESS_DATA_DIR, testConfig, testEnvironment, uniqueId } from './context.ts';

export const API = '/api/agent/v1';

/** The path templates of the read API (read-api.md, Endpoints), relative to API. */
export const CONTRACT_PATHS = [
  '/me',
  '/popular',
  '/traders/{trader}',
  '/traders/{trader}/top-markets',
  '/traders/{trader}/markets',
  '/traders/{trader}/markets/{condition_id}/summary',
  '/traders/{trader}/markets/{condition_id}',
  '/traders/{trader}/markets/{condition_id}/tape',
  '/traders/{trader}/pnl-series',
  '/traders/{trader}/fills',
  '/flow/whales',
  '/tapes',
  '/tapes/{tape_id}',
  '/tapes/{tape_id}/events',
  '/tapes/{tape_id}/download',
  '/openapi.json',
] as const;

/** A config on the in-process log (no Kafka) and its own database in the process store. */
export function inProcessConfig(
  label: string,
  extra: Record<string, string> = {},
  overrides: ConfigOverrides = {},
): Config {
  const environment: Record<string, string | undefined> = testEnvironment(uniqueId(label), PROCESS_DATA_DIR, extra);
  delete environment.KAFKA_BROKERS;
  return testConfig(environment, overrides);
}

export interface TestApi {
  app: FastifyInstance;
  store: Store;
  config: Config;
  keys: Record<PlanId, string>;
  /** GET with a plan's key (or a raw Authorization header value, or none). */
  get(
    url: string,
    options?: { plan?: PlanId; authorization?: string | null; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** Publishes one account and key per plan (through the pipeline, like the dashboard would). */
export async function publishPlanKeys(config: Config, nowSeconds: number): Promise<Record<PlanId, string>> {
  return withPublisher(config, createLogger('error'), ({ publisher }) => publishPlanKeysTo(publisher, nowSeconds));
}

/** The same accounts and keys, to a given sink (a test that waits for what it published to be ingested). */
export async function publishPlanKeysTo(sink: EventSink, nowSeconds: number): Promise<Record<PlanId, string>> {
  const keys = {} as Record<PlanId, string>;
  for (const plan of ['basic', 'pro', 'max'] as const) {
    const accountId = `test-${plan}`;
    await publishAccount(sink, { accountId, plan, displayName: `Test ${plan}`, version: nowSeconds });
    keys[plan] = (await publishNewKey(sink, accountId, `${plan} key`, nowSeconds)).plaintext;
  }
  return keys;
}

/** A test's account: its plan, whether it holds a founder seat, and the names of its keys. */
export interface TestAccount<K extends string> {
  accountId: string;
  plan: PlanId;
  founder?: boolean;
  keys: readonly K[];
}

/** Publishes each account (named as its id) and a key per key name; returns each key's secret by name. */
export async function publishTestAccounts<K extends string>(
  sink: EventSink,
  accounts: readonly TestAccount<K>[],
  nowSeconds: number,
): Promise<Record<K, string>> {
  const keys = {} as Record<K, string>;
  for (const account of accounts) {
    await publishAccount(sink, {
      accountId: account.accountId,
      plan: account.plan,
      displayName: account.accountId,
      founder: account.founder ?? false,
      version: nowSeconds,
    });
    for (const name of account.keys)
      keys[name] = (await publishNewKey(sink, account.accountId, `key ${name}`, nowSeconds)).plaintext;
  }
  return keys;
}

export interface TestApiOptions {
  now: () => number;
  keys: Record<PlanId, string>;
  /** The gates' store (default: a fresh process-memory one); the test owns and closes it. */
  gates?: GateStore;
  /** The gates' clock in ms (default: the gate store's own). */
  gatesClockMs?: () => number;
  /** Wraps the store the routes read (e.g. to hold a read until the test lets it go). */
  wrapStore?: (store: Store) => Store;
  /** Where trader-scoped calls note their wallet for the upstream poller. */
  walletRequests?: WalletRequestLog;
  /** The load-shedding limiter (default: one from config). */
  inFlight?: InFlightLimiter;
  /** The service's log (default: silent); a test that checks what is logged passes its own. */
  log?: Logger;
  /** The clock of the key lookup cache, in ms (default: the wall clock). */
  authClockMs?: () => number;
  /** The live plane's slots, whose watches are `/popular`'s watcher counts (default: none held). */
  slots?: SlotStore;
}

/**
 * Slots in process memory holding `count` watches of each trader, one user each, leased on the wall clock
 * for longer than a suite runs: the live watcher counts `/popular` reads, without opening the sessions.
 */
export async function slotsWatching(counts: Record<string, number>): Promise<SlotStore> {
  const slots = new MemorySlots();
  for (const [trader, count] of Object.entries(counts))
    for (let index = 0; index < count; index++) {
      const verdict = await slots.acquire({
        userId: `watcher-${trader}-${index}`,
        slotId: 'watch',
        cap: 1,
        leaseMs: 86_400_000,
        nowMs: null,
        trader,
      });
      if (verdict.kind !== 'acquired') throw new Error(`a watcher's slot was not free: ${JSON.stringify(verdict)}`);
    }
  return slots;
}

/**
 * A gates clock for suites about the reads, not the budget: every reading moves it one step (a UTC day by
 * default) on, so the bucket is full, the minute empty and the day's quotas fresh on every call (the gates
 * still run). A request reads it more than once (the address block, then the admission), so a suite that
 * reads a monthly count across many calls takes a shorter step to stay inside one month.
 */
export function gatesNeverBind(startMs = Date.UTC(2026, 0, 1), stepMs = 86_400_000): () => number {
  let clockMs = startMs;
  return () => (clockMs += stepMs);
}

export async function startTestApi(config: Config, options: TestApiOptions): Promise<TestApi> {
  const store = await openStore(config.clickhouse);
  const app = await buildHttpServer({
    log: options.log ?? createLogger('silent'),
    storeAlive: async () => true,
    readiness: () => ({ ready: true, detail: {} }),
    api: {
      config,
      store: options.wrapStore ? options.wrapStore(store) : store,
      now: options.now,
      gates: options.gates,
      gatesClockMs: options.gatesClockMs,
      inFlight: options.inFlight,
      ...(options.walletRequests ? { walletRequests: options.walletRequests } : {}),
      authClockMs: options.authClockMs,
      ...(options.slots ? { slots: options.slots } : {}),
    },
  });
  await app.ready();
  return {
    app,
    store,
    config,
    keys: options.keys,
    get(url, { plan = 'pro', authorization, headers = {} } = {}) {
      const value = authorization === undefined ? `Bearer ${options.keys[plan]}` : authorization;
      return app.inject({
        method: 'GET',
        url: url.startsWith('/') ? url : `${API}/${url}`,
        headers: { ...(value === null ? {} : { authorization: value }), ...headers },
      });
    },
    async close() {
      await app.close();
      await store.close();
    },
  };
}

/** The JSON body of a response, gunzipped when it is gzip-encoded. */
export function bodyOf(response: LightMyRequestResponse): unknown {
  if (response.statusCode === 304 || response.rawPayload.length === 0) return null;
  const raw = response.headers['content-encoding'] === 'gzip' ? gunzipSync(response.rawPayload) : response.rawPayload;
  return JSON.parse(raw.toString('utf8'));
}

type OpenApiDocument = {
  paths: Record<
    string,
    Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }>
  >;
};

/** Validates responses against the response schemas of an OpenAPI 3.1 document. */
export class OpenApiResponses {
  readonly #ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  readonly #routes: { pattern: RegExp; path: string }[];
  readonly checked: string[] = [];
  readonly #compiled = new Map<string, ReturnType<Ajv2020['compile']>>();

  constructor(private readonly document: OpenApiDocument) {
    this.#routes = Object.keys(document.paths).map((path) => ({
      path,
      pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    }));
  }

  /** Throws when the response does not match the document (undocumented status, or body mismatch). */
  check(url: string, response: LightMyRequestResponse): void {
    const pathname = url.split('?')[0]!;
    const route = this.#routes.find((candidate) => candidate.pattern.test(pathname));
    if (!route) throw new Error(`${pathname} is not in the OpenAPI document`);
    const operation = this.document.paths[route.path]!.get;
    const documented = operation?.responses?.[String(response.statusCode)];
    if (!documented) throw new Error(`${route.path}: status ${response.statusCode} is not documented`);
    const schema = documented.content?.['application/json']?.schema;
    const body = bodyOf(response);
    if (schema === undefined) {
      if (body !== null)
        throw new Error(`${route.path} ${response.statusCode}: a body where the document declares none`);
      this.checked.push(`${route.path} ${response.statusCode}`);
      return;
    }
    const key = `${route.path} ${response.statusCode}`;
    let validate = this.#compiled.get(key);
    if (!validate) this.#compiled.set(key, (validate = this.#ajv.compile(schema as object)));
    if (!validate(body)) {
      throw new Error(
        `${route.path} ${response.statusCode}: ${this.#ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
      );
    }
    this.checked.push(`${route.path} ${response.statusCode}`);
  }
}
