/**
 * The one program. Its first argument is the role:
 *
 *   all       (default) embedded ClickHouse, in-process log, simulator, ingest and HTTP in one process
 *   ingest    a consumer-group member: Kafka topics → ClickHouse projections
 *   api       the read API alone (stateless), against CLICKHOUSE_URL
 *   simulate  publish the simulator's events (backfill, then live unless --no-live)
 *   replay    publish .jsonl / .jsonl.gz files (exported topics) again
 *   export    write every topic to .jsonl.gz files
 *   import    import Polymarket data-API exports (CSV / JSON)
 *   migrate   apply the ClickHouse migrations and exit
 *   keys      admin: mint, revoke and list the API keys of an account (publishes account events)
 *   upstream  poll Polymarket's public APIs (markets, profiles, equity, fills, leaderboard) and publish them
 *   archive   index Polymarket's fills, legs and resolutions from Polygon (POLYGON_RPC_URL)
 *   live      the live plane alone (WebSocket at {base_url}/live), fed from Kafka; scaled apart from the API
 *   clob      subscribe Polymarket's CLOB market channel for the watched and popular markets; publish books and prints
 *
 * Configuration comes from the environment (config.ts); docs/configuration.md lists every variable.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig, loadWarnings, type Config } from './config.ts';
import { createLogger, type Logger } from './log.ts';
import { DataDirectoryInUseError } from './projections/embedded-lock.ts';
import { exitAtOnce } from './projections/store.ts';

/** Long-running roles without an HTTP server of their own: they serve /metrics on METRICS_PORT. */
const METRICS_PORT_ROLES: ReadonlySet<string> = new Set(['ingest', 'simulate', 'archive', 'upstream', 'clob']);

const ROLES = [
  'all',
  'ingest',
  'api',
  'simulate',
  'replay',
  'export',
  'import',
  'migrate',
  'keys',
  'upstream',
  'archive',
  'clob',
  'live',
] as const;
type Role = (typeof ROLES)[number];

const USAGE = `usage: main.ts <role> [options]
roles:
  all                                   everything in one process (default; what \`npm start\` runs)
  ingest                                consume Kafka into ClickHouse (needs KAFKA_BROKERS)
  api                                   serve the read API alone (normally with CLICKHOUSE_URL)
  simulate [--days N] [--no-live]       publish simulated events (backfill N days, then live)
  replay <file|dir>...                  publish .jsonl/.jsonl.gz files (as written by export)
  export <dir> [--no-gzip]              write every topic to <dir>/<topic>.jsonl.gz
  import <file|dir>... [--era v1|v2] [--no-trades]
                                        import Polymarket data-API exports (CSV, JSON, JSONL, .gz); each row's
                                        era by its time (the V1 → V2 cut-over) unless --era forces one
  migrate                               apply ClickHouse migrations and exit
  upstream                              poll Polymarket's public APIs and publish what they say (UPSTREAM_* config)
  archive                               index Polygon logs (POLYGON_RPC_URL) into the topics; resumes from its checkpoint
  clob                                  subscribe Polymarket's CLOB market channel (CLOB_WS_URL) for the watched and
                                        popular markets; publish their books and prints (needs CLICKHOUSE_URL)
  live                                  serve the live plane alone, fed from Kafka (needs KAFKA_BROKERS; REDIS_URL
                                        shares its slots across instances)
  keys mint --user <account_id> [--plan basic|pro|max] --label <label> [--name <display name>] [--founder|--no-founder]
                                        create/update the account, mint a key, print it once on stdout
  keys revoke --key-id <key_id> | --user <account_id> --last4 <xxxx>
                                        revoke a key
  keys list --user <account_id> [--json]
                                        the account's plan and keys (never hashes)
                                        (keys exits 0 done, 1 refused or not found, 2 usage error)`;

async function main(argv: string[]): Promise<number> {
  const [roleArgument, ...rest] = argv;
  if (roleArgument === '--help' || roleArgument === '-h' || roleArgument === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const role = (roleArgument ?? 'all') as Role;
  if (!ROLES.includes(role)) {
    process.stderr.write(`unknown role ${JSON.stringify(roleArgument)}\n${USAGE}\n`);
    return 2;
  }

  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  }
  loaded = config;
  // The keys role prints a plaintext key on stdout: its log goes to stderr so the two never mix.
  const log: Logger = createLogger(config.logLevel, role === 'keys' ? process.stderr : undefined).child({ role });
  for (const { variable, message } of loadWarnings()) log.warn({ variable }, message);
  await mkdir(config.dataDir, { recursive: true });

  if (role === 'keys') {
    const { runKeys } = await import('./roles/keys.ts');
    return runKeys(config, log, rest);
  }
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      days: { type: 'string' },
      'no-live': { type: 'boolean', default: false },
      'no-gzip': { type: 'boolean', default: false },
      'no-trades': { type: 'boolean', default: false },
      era: { type: 'string' },
    },
  });

  if (METRICS_PORT_ROLES.has(role)) {
    const { startMetricsServer } = await import('./metrics/server.ts');
    const metrics = await startMetricsServer(config.metrics).catch((error: NodeJS.ErrnoException) => {
      // Several workers on one host (a laptop, tests) share its ports: the work matters more than its metrics.
      if (error.code !== 'EADDRINUSE') throw error;
      log.warn(
        { port: config.metrics.port },
        'METRICS_PORT is in use: this process serves no /metrics (give each process its own METRICS_PORT, or 0)',
      );
      return null;
    });
    if (metrics) log.info({ port: metrics.port }, 'metrics on /metrics');
    try {
      return await runRole(role, config, log, values, positionals);
    } finally {
      await metrics?.close();
    }
  }
  return runRole(role, config, log, values, positionals);
}

interface RoleOptions {
  days?: string | undefined;
  'no-live'?: boolean | undefined;
  'no-gzip'?: boolean | undefined;
  'no-trades'?: boolean | undefined;
  era?: string | undefined;
}

async function runRole(
  role: Exclude<Role, 'keys'>,
  config: Config,
  log: Logger,
  values: RoleOptions,
  positionals: string[],
): Promise<number> {
  const { runExport, runImport, runIngest, runMigrate, runReplay, runSimulate } = await import('./roles/commands.ts');
  switch (role) {
    case 'all': {
      const { runAll } = await import('./roles/all.ts');
      return runAll(config, log);
    }
    case 'ingest':
      return runIngest(config, log);
    case 'api': {
      const { runApi } = await import('./roles/api.ts');
      return runApi(config, log);
    }
    case 'simulate':
      return runSimulate(config, log, {
        backfillDays: values.days === undefined ? config.simulator.backfillDays : Number(values.days),
        live: !values['no-live'] && config.simulator.live,
      });
    case 'replay':
      return runReplay(config, log, positionals);
    case 'export':
      return runExport(config, log, positionals[0], { gzip: !values['no-gzip'] });
    case 'import':
      return runImport(config, log, positionals, { era: values.era, emitTrades: !values['no-trades'] });
    case 'migrate':
      return runMigrate(config, log);
    case 'upstream': {
      const { shutdownSignal } = await import('./roles/runtime.ts');
      const { runUpstream } = await import('./roles/upstream.ts');
      return runUpstream(config, log, shutdownSignal(log, config.shutdown.graceMs));
    }
    case 'archive': {
      const { runArchive } = await import('./roles/archive.ts');
      return runArchive(config, log);
    }
    case 'live': {
      const { runLive } = await import('./roles/live.ts');
      return runLive(config, log);
    }
    case 'clob': {
      const { shutdownSignal } = await import('./roles/runtime.ts');
      const { runClob } = await import('./roles/clob.ts');
      return runClob(config, log, shutdownSignal(log, config.shutdown.graceMs));
    }
  }
}

/** The configuration once read (for the one-line explanation of a data directory in use). */
let loaded: Config | undefined;

/** One line for the person who runs a command while `npm start` (or another process) holds the embedded store. */
function inUseLine(error: DataDirectoryInUseError): string {
  const dataDir = loaded?.dataDir;
  const inDataDir = dataDir !== undefined && !path.relative(dataDir, error.directory).startsWith('..');
  const what = inDataDir
    ? `DATA_DIR is in use by another process (${error.pid === null ? '' : `pid ${error.pid}, `}${dataDir})`
    : error.message;
  return `stop \`npm start\` first: ${what}`;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // A role that returned has closed what it opened; a handle it missed must not keep the process alive.
    if (loaded) setTimeout(() => process.exit(code), loaded.shutdown.graceMs).unref();
  },
  (error: unknown) => {
    // What a failed start opened (the store, the worker, the simulator's timers, signal handlers) would
    // keep the process alive and deaf to SIGTERM: the reason is written (stderr is synchronous on Linux),
    // then the process ends at once, without the embedded engine's exit handlers (exitAtOnce).
    if (error instanceof DataDirectoryInUseError) process.stderr.write(`${inUseLine(error)}\n`);
    else process.stderr.write(`fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    exitAtOnce(1);
  },
);
