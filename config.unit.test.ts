import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONFIGURATION_DOC, configurationMarkdown } from './config-docs.ts';
import { ENVIRONMENT_VARIABLES, parseConfig, removedVariablesIn } from './config.ts';
import { REMOVED_VARIABLES, VARIABLE_SECTIONS } from './config-environment.ts';

describe('the environment an operator sets', () => {
  it('is at most 60 variables, each described in the schema', () => {
    expect(ENVIRONMENT_VARIABLES.length).toBeLessThanOrEqual(60);
    const described = VARIABLE_SECTIONS.flatMap((section) => Object.entries(section.variables)).filter(
      ([, schema]) => (schema.description ?? '').length > 20,
    );
    expect(described.map(([name]) => name).sort()).toEqual([...ENVIRONMENT_VARIABLES].sort());
  });

  it('is documented by docs/configuration.md, generated from the schema (run `npm run docs` after changing config-environment.ts)', () => {
    expect(readFileSync(CONFIGURATION_DOC, 'utf8'), 'docs/configuration.md is stale: run `npm run docs`').toBe(
      configurationMarkdown(),
    );
  });
});

describe('removed variables', () => {
  it('are no longer in the schema', () => {
    expect(Object.keys(REMOVED_VARIABLES).filter((name) => ENVIRONMENT_VARIABLES.includes(name))).toEqual([]);
  });

  it('warn once each when the environment still sets them, naming the variable and where its value went', () => {
    const warnings = removedVariablesIn({
      INGEST_ROLLUP_INTERVAL_MS: '500',
      READ_CACHE_TRADER_MB: '',
      PORT: '8080',
      LOG_LEVEL: 'info',
    });
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

/** The prose an operator reads: README.md, mcp/README.md and docs/*.md but the generated configuration.md. */
const ROOT = path.dirname(fileURLToPath(import.meta.url));
const PROSE = [
  'README.md',
  'mcp/README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md') && name !== 'configuration.md')
    .sort()
    .map((name) => `docs/${name}`),
].map((file) => ({ file, text: readFileSync(path.join(ROOT, file), 'utf8') }));

/** Where a name stands as a whole word (`_` counts as part of a word, so `DEFAULT_EXCHANGE_V2_START_TS` does not name `EXCHANGE_V2_START_TS`). */
const wholeWord = (name: string) => new RegExp(`(?<![A-Za-z0-9_])${name}(?![A-Za-z0-9_])`);

/** The beginnings of this service's variable names: an UPPER_SNAKE token with one of them looks like a variable. */
const VARIABLE_PREFIXES = [
  'LOG_',
  'DATA_DIR',
  'HOST',
  'PORT',
  'CLICKHOUSE_',
  'KAFKA_',
  'REDIS_',
  'API_',
  'AUTH_',
  'HEAVY_',
  'MCP_',
  'READ_CACHE_',
  'CHART_',
  'TAPE_',
  'DOWNLOAD_',
  'PUBLIC_URL',
  'S3_',
  'INGEST_',
  'CARD_',
  'WHALE_',
  'UPSTREAM_',
  'ARCHIVE_',
  'SIM_',
  'POLYGON_',
  'EXCHANGE_',
];

/** Tokens in backticks that look like variables and are not, each with the reason. */
const NOT_VARIABLES: Readonly<Record<string, string>> = {
  API_KEY: 'the placeholder of `Authorization: Bearer <API_KEY>` (docs/mcp.md): a key, not a variable',
  UPSTREAM_PUBLISHED_LIMITS: "the constant of Polymarket's published rate limits in config-derived.ts",
};

/**
 * The UPPER_SNAKE tokens in backticks (code spans, which may wrap a line, and fenced blocks) of a Markdown
 * text that begin like a variable but are neither a current nor a removed one, nor a known non-variable.
 * A family (`API_`, `API_*`) must begin at least one current variable.
 */
function unknownVariablesIn(markdown: string): string[] {
  const known = new Set([...ENVIRONMENT_VARIABLES, ...Object.keys(REMOVED_VARIABLES), ...Object.keys(NOT_VARIABLES)]);
  const fenced = [...markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((match) => match[1] ?? '');
  const spans = [...markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '').matchAll(/`((?:[^`\n]|\n(?![ \t]*\n))+)`/g)].map(
    (match) => match[1] ?? '',
  );
  const unknown = new Set<string>();
  for (const code of [...spans, ...fenced]) {
    for (const [token] of code.matchAll(/(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]*\*?(?![A-Za-z0-9_])/g)) {
      if (!VARIABLE_PREFIXES.some((prefix) => token.startsWith(prefix)) || known.has(token)) continue;
      const family = /_\*?$/.exec(token) ? token.replace(/\*$/, '') : null;
      if (family !== null && ENVIRONMENT_VARIABLES.some((name) => name.startsWith(family))) continue;
      unknown.add(token);
    }
  }
  return [...unknown];
}

describe('the prose (README.md, mcp/README.md, docs/*.md)', () => {
  it('names no removed variable as if an operator could set it (name the config field or constant and its value)', () => {
    const found = PROSE.flatMap(({ file, text }) =>
      Object.keys(REMOVED_VARIABLES)
        .filter((name) => wholeWord(name).test(text))
        .map((name) => `${file} names ${name}, a removed variable (${REMOVED_VARIABLES[name]})`),
    );
    expect(found).toEqual([]);
  });

  it('names no variable in backticks that does not exist (a typo or an invented name)', () => {
    const found = PROSE.flatMap(({ file, text }) =>
      unknownVariablesIn(text).map((token) => `${file} names ${token}, which is no variable`),
    );
    expect(found).toEqual([]);
  });

  it('is checked by a scan that finds an invented name in a span or a block, and no prose word or code constant', () => {
    expect(
      unknownVariablesIn(
        'Set `READ_CACHE_MBS=64`, `S3_BUCKET=b\nS3_PREFIXES=x`.\n\n```sh\nAPI_MAX_INFLIGHT=4 npm start\n```\n',
      ),
    ).toEqual(['READ_CACHE_MBS', 'S3_PREFIXES', 'API_MAX_INFLIGHT']);
    expect(
      unknownVariablesIn(
        'API_FOO in prose; `TOP_FILL_SOURCE_RANK`, `READ_CACHE_MB`, `API_*`, `HOST`, `UPSTREAM_PUBLISHED_LIMITS`',
      ),
    ).toEqual([]);
    expect(unknownVariablesIn('`SIM_*` and `WHALE_*`')).toEqual(['WHALE_*']);
  });
});

describe('values that became constants or derived', () => {
  const config = parseConfig({});

  it('keep their former defaults', () => {
    expect(config.api.readCache).toMatchObject({
      bytes: 64 * 1024 * 1024,
      traderAnswerSeconds: 5,
      openMarketSeconds: 1,
      upstreamStateSeconds: 1,
    });
    expect(config.ingest).toMatchObject({
      lingerMs: 1000,
      rollupIntervalMs: 2000,
      maxBatchMessages: 20_000,
      writeRetries: 5,
      retryBaseMs: 200,
    });
    expect(config.http).toMatchObject({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      idleTimeoutMs: 60_000,
      bodyLimitBytes: 256 * 1024,
    });
    expect(config.gates.authFailures).toEqual({ limit: 20, windowSeconds: 600, blockSeconds: 900 });
    expect(config.whales).toMatchObject({ burstGapSeconds: 900, exactAboveUsd: 1000 });
    expect(config.upstream).toMatchObject({
      staleAfterSeconds: 300,
      heartbeatSeconds: 60,
      requestTtlSeconds: 604_800,
      v2StartTs: 1_777_374_900,
    });
    expect(config.clickhouse.embeddedPath).toBe(`${config.dataDir}/clickhouse`);
  });

  it('derive from the variables that stay', () => {
    expect(parseConfig({ PUBLIC_URL: 'https://analytics.example.com/' }).mcp.publicUrl).toBe(
      'https://analytics.example.com/mcp',
    );
    expect(parseConfig({ PORT: '9000' }).mcp.publicUrl).toBe('http://localhost:9000/mcp');
    expect(parseConfig({ READ_CACHE_MB: '10' }).api.readCache.bytes).toBe(5 * 1024 * 1024);
    expect(parseConfig({ API_OPEN_MARKET_MAX_AGE_S: '0' }).api.readCache).toMatchObject({
      openMarketSeconds: 0,
      traderAnswerSeconds: 0,
    });
    expect(parseConfig({ S3_BUCKET: 'b' }).tapes.download.s3).toMatchObject({
      forcePathStyle: false,
      prefix: 'tapes/',
    });
    expect(parseConfig({ S3_BUCKET: 'b', S3_ENDPOINT: 'http://minio:9000' }).tapes.download.s3?.forcePathStyle).toBe(
      true,
    );
    const archive = parseConfig({ POLYGON_RPC_URL: 'http://node', ARCHIVE_RANGE_MAX: '100' }).archive!;
    expect(archive.range).toEqual({ initial: 100, max: 100 });
    expect(archive.contracts.ctfExchangeV2).toBe('0xe111180000d2663c0091e4f400237545b87b996b');
  });

  it('refuses a query timeout that reaches the idle-connection timeout', () => {
    expect(() => parseConfig({ CLICKHOUSE_QUERY_TIMEOUT_S: '60' })).toThrow(/CLICKHOUSE_QUERY_TIMEOUT_S/);
  });
});

describe('API_TRUST_PROXY', () => {
  it('refuses a range that trusts every address, as it refuses true', () => {
    for (const value of ['true', '0.0.0.0/0', '::/0', '::ffff:0:0/96', '::/8', '10.0.0.1,0.0.0.0/0'])
      expect(() => parseConfig({ API_TRUST_PROXY: value }), value).toThrow(/API_TRUST_PROXY/);
  });

  it('takes proxies by address or narrower ranges', () => {
    expect(parseConfig({ API_TRUST_PROXY: '10.0.0.0/8, 2001:db8::/32,loopback' }).http.trustProxy).toEqual([
      '10.0.0.0/8',
      '2001:db8::/32',
      'loopback',
    ]);
  });
});

describe('overrides on the parsed configuration', () => {
  it('change one setting deeply and leave its siblings', () => {
    const config = parseConfig({}, { ingest: { rollupIntervalMs: 50 }, api: { inFlight: { queueDepth: 2 } } });
    expect(config.ingest).toMatchObject({ rollupIntervalMs: 50, lingerMs: 1000 });
    expect(config.api.inFlight.queueDepth).toBe(2);
    expect(config.api.inFlight.maxQueueWaitMs).toBe(100);
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
