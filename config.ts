/**
 * The one configuration module callers import. The environment is parsed once, here, by the zod schema of
 * config-environment.ts; every other module receives the typed, frozen object. Nothing else reads
 * `process.env`.
 *
 * The schema holds only what a deployment changes (addresses, secrets, capacity, sources). The plans are
 * in config-plans.ts, and everything else is a constant in `configOf` (config-derived.ts), with the reason
 * for its value: tests change those on the parsed object (`parseConfig(environment, overrides)`), never
 * through the environment.
 */
import { configOf } from './config-derived.ts';
import { environmentSchema, type RemovedVariableWarning, removedVariablesIn } from './config-environment.ts';

export { UPSTREAM_PUBLISHED_LIMITS } from './config-derived.ts';
export {
  ENVIRONMENT_VARIABLES,
  hostnameOf,
  type RemovedVariableWarning,
  removedVariablesIn,
} from './config-environment.ts';
export { effectivePlan, nextPlan, PLAN_IDS, type PlanId, type PlanLimits } from './config-plans.ts';
export type {
  ArchiveConfig,
  ClobConfig,
  PageLimits,
  UpstreamConfig,
  UpstreamRouteLimit,
  UpstreamService,
} from './config-shapes.ts';

/** The typed configuration: what `configOf` builds from a parsed environment (one source, no hand-written twin). */
export type Config = ReturnType<typeof configOf>;

type Overrides<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: Overrides<T[K]> } : T;

/** Values set on the parsed configuration instead of the environment (tests, benchmarks): any subtree, merged in. */
export type ConfigOverrides = Overrides<Config>;

/**
 * Parses an environment into the typed configuration, with `overrides` merged in (deeply; arrays and
 * values replace); throws a readable error on invalid input. Pure: warnings about the environment are
 * `removedVariablesIn`'s.
 */
export function parseConfig(environment: Record<string, string | undefined>, overrides: ConfigOverrides = {}): Config {
  const parsed = environmentSchema.safeParse(environment);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new Error(`invalid configuration: ${problems}`);
  }
  const config = merged(configOf(parsed.data), overrides, 'config') as Config;
  // Node refuses a headers bound above the request bound; an idle bound at or below the query bound
  // would cut off clients waiting for a slow (but legitimate) answer.
  const { http, clickhouse } = config;
  if (http.headersTimeoutMs > http.requestTimeoutMs) {
    throw new Error(
      `invalid configuration: the headers timeout (${http.headersTimeoutMs} ms) must not exceed the request timeout (${http.requestTimeoutMs} ms)`,
    );
  }
  if (http.idleTimeoutMs <= clickhouse.queryTimeoutSeconds * 1000) {
    throw new Error(
      `invalid configuration: CLICKHOUSE_QUERY_TIMEOUT_S (${clickhouse.queryTimeoutSeconds} s) must stay below the idle-connection timeout (${http.idleTimeoutMs / 1000} s): a client waiting for a slow answer is not idle`,
    );
  }
  return deepFreeze(config);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function merged(base: unknown, overrides: unknown, at: string): unknown {
  if (overrides === undefined) return base;
  if (!isRecord(overrides)) return overrides;
  if (!isRecord(base)) throw new Error(`config override ${at}: this configuration has no ${at} to change (it is off)`);
  const result: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    if (!(key in base)) throw new Error(`config override ${at}.${key}: no such setting`);
    result[key] = merged(base[key], value, `${at}.${key}`);
  }
  return result;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value as Record<string, unknown>)) deepFreeze(inner);
  }
  return value;
}

let loaded: Config | undefined;

/** The process configuration, parsed from `process.env` on first use (with `overrides` on that first use). */
export function loadConfig(overrides?: ConfigOverrides): Config {
  loaded ??= parseConfig(process.env, overrides);
  return loaded;
}

/** The removed variables `process.env` still sets: the roles log each once at startup. */
export function loadWarnings(): RemovedVariableWarning[] {
  return removedVariablesIn(process.env);
}
