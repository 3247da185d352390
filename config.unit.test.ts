import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIGURATION_DOC, configurationMarkdown } from './config-docs.ts';
import { ENVIRONMENT_VARIABLES, REMOVED_VARIABLES, VARIABLE_SECTIONS, parseConfig, removedVariablesIn } from './config.ts';

describe('the environment an operator sets', () => {
  it('is at most 60 variables, each described in the schema', () => {
    expect(ENVIRONMENT_VARIABLES.length).toBeLessThanOrEqual(60);
    const described = VARIABLE_SECTIONS.flatMap((section) => Object.entries(section.variables)).filter(([, schema]) => (schema.description ?? '').length > 20);
    expect(described.map(([name]) => name).sort()).toEqual([...ENVIRONMENT_VARIABLES].sort());
  });

  it('is documented by docs/configuration.md, generated from the schema (run `npm run docs` after changing config.ts)', () => {
    expect(readFileSync(CONFIGURATION_DOC, 'utf8'), 'docs/configuration.md is stale: run `npm run docs`').toBe(configurationMarkdown());
  });
});

describe('removed variables', () => {
  it('are no longer in the schema', () => {
    expect(Object.keys(REMOVED_VARIABLES).filter((name) => ENVIRONMENT_VARIABLES.includes(name))).toEqual([]);
  });

  it('warn once each when the environment still sets them, naming the variable and where its value went', () => {
    const warnings = removedVariablesIn({ INGEST_ROLLUP_INTERVAL_MS: '500', READ_CACHE_TRADER_MB: '', PORT: '8080', LOG_LEVEL: 'info' });
    expect(warnings.map((warning) => warning.variable)).toEqual(['READ_CACHE_TRADER_MB', 'INGEST_ROLLUP_INTERVAL_MS']);
    for (const warning of warnings) {
      expect(warning.message).toContain(warning.variable);
      expect(warning.message).toContain('no longer read');
    }
    expect(warnings.find((warning) => warning.variable === 'READ_CACHE_TRADER_MB')?.message).toContain('READ_CACHE_MB');
    expect(removedVariablesIn({ PORT: '8080', READ_CACHE_MB: '64' })).toEqual([]);
  });

  it('do not change the parsed configuration (parseConfig stays pure: the warning is the roles’ to log)', () => {
    expect(parseConfig({ INGEST_ROLLUP_INTERVAL_MS: '1', API_KEY_CACHE_S: '0' })).toEqual(parseConfig({}));
  });
});

describe('values that became constants or derived', () => {
  const config = parseConfig({});

  it('keep their former defaults', () => {
    expect(config.api.readCache).toMatchObject({ traderAnswerBytes: 64 * 1024 * 1024, marketAnswerBytes: 64 * 1024 * 1024, traderAnswerSeconds: 5, openMarketSeconds: 1 });
    expect(config.ingest).toMatchObject({ lingerMs: 1000, rollupIntervalMs: 2000, maxBatchMessages: 20_000, writeRetries: 5, retryBaseMs: 200 });
    expect(config.http).toMatchObject({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, idleTimeoutMs: 60_000, bodyLimitBytes: 256 * 1024 });
    expect(config.gates.authFailures).toEqual({ limit: 20, windowSeconds: 600, blockSeconds: 900 });
    expect(config.whales).toMatchObject({ burstGapSeconds: 900, exactAboveUsd: 1000 });
    expect(config.upstream).toMatchObject({ staleAfterSeconds: 300, heartbeatSeconds: 60, requestTtlSeconds: 604_800, v2StartTs: 1_777_374_900 });
    expect(config.clickhouse.embeddedPath).toBe(`${config.dataDir}/clickhouse`);
  });

  it('derive from the variables that stay', () => {
    expect(parseConfig({ PUBLIC_URL: 'https://analytics.example.com/' }).mcp.publicUrl).toBe('https://analytics.example.com/mcp');
    expect(parseConfig({ PORT: '9000' }).mcp.publicUrl).toBe('http://localhost:9000/mcp');
    expect(parseConfig({ READ_CACHE_MB: '10' }).api.readCache.traderAnswerBytes).toBe(5 * 1024 * 1024);
    expect(parseConfig({ API_OPEN_MARKET_MAX_AGE_S: '0' }).api.readCache).toMatchObject({ openMarketSeconds: 0, traderAnswerSeconds: 0 });
    expect(parseConfig({ S3_BUCKET: 'b' }).tapes.download.s3).toMatchObject({ forcePathStyle: false, prefix: 'tapes/' });
    expect(parseConfig({ S3_BUCKET: 'b', S3_ENDPOINT: 'http://minio:9000' }).tapes.download.s3?.forcePathStyle).toBe(true);
    const archive = parseConfig({ POLYGON_RPC_URL: 'http://node', ARCHIVE_RANGE_MAX: '100' }).archive!;
    expect(archive.range).toEqual({ initial: 100, max: 100 });
    expect(archive.contracts.ctfExchangeV2).toBe('0xe111180000d2663c0091e4f400237545b87b996b');
  });

  it('refuses a query timeout that reaches the idle-connection timeout', () => {
    expect(() => parseConfig({ CLICKHOUSE_QUERY_TIMEOUT_S: '60' })).toThrow(/CLICKHOUSE_QUERY_TIMEOUT_S/);
  });
});

describe('overrides on the parsed configuration', () => {
  it('change one setting deeply and leave its siblings', () => {
    const config = parseConfig({}, { ingest: { rollupIntervalMs: 50 }, api: { inFlight: { queueDepth: 2 } } });
    expect(config.ingest).toMatchObject({ rollupIntervalMs: 50, lingerMs: 1000 });
    expect(config.api.inFlight.queueDepth).toBe(2);
    expect(config.api.inFlight.maxQueueWaitMs).toBe(30);
    expect(Object.isFrozen(config.ingest)).toBe(true);
  });

  it('refuse a setting that does not exist, or one under a part that is off', () => {
    expect(() => parseConfig({}, { ingest: { lingerMS: 1 } } as never)).toThrow(/ingest\.lingerMS/);
    expect(() => parseConfig({}, { archive: { pollMs: 20 } })).toThrow(/config\.archive/);
  });

  it('are checked like the environment: the headers timeout stays within the request timeout', () => {
    expect(() => parseConfig({}, { http: { headersTimeoutMs: 40_000 } })).toThrow(/headers timeout/);
  });
});
