/**
 * bench:gates — what the gates cost a request: one admission through the Budget (the Lua script's round
 * trip plus its JavaScript around it), beside a bare Redis PING round trip measured in the same run on
 * the same connection settings. Aim: the gate check under 2× a PING.
 *
 * Traffic is spread over many users with Pro-like limits raised so that every call is admitted (the
 * full path: bucket, minute, quota, consumption), and half of the calls are trader-scoped on a Basic-like
 * plan (the distinct-wallet set) or heavy (a lane slot taken and given back). Rounds alternate the
 * measurements; figures are medians over rounds of each round's median and p99.
 *
 *   REDIS_URL (default redis://127.0.0.1:6379), GATES_BENCH_CALLS (per round, default 5000), GATES_BENCH_ROUNDS (5)
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { Budget } from '../../operations/gates/budget.ts';
import { MemoryGates } from '../../operations/gates/memory.ts';
import { RedisGates } from '../../operations/gates/redis.ts';
import type { Caller } from '../../operations/auth.ts';
import { parseConfig } from '../../config.ts';
import { createLogger } from '../../log.ts';
import { deleteKeysWithPrefix } from '../harness/redis.ts';
import { median, runBenchmark } from './support.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const CALLS = Number(process.env.GATES_BENCH_CALLS ?? 5000);
const ROUNDS = Number(process.env.GATES_BENCH_ROUNDS ?? 5);
const USERS = 200;

function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function timeEach(calls: number, run: (index: number) => Promise<unknown>): Promise<number[]> {
  const micros: number[] = [];
  for (let index = 0; index < calls; index++) {
    const started = process.hrtime.bigint();
    await run(index);
    micros.push(Number(process.hrtime.bigint() - started) / 1000);
  }
  return micros;
}

async function main(): Promise<void> {
  const config = parseConfig({ REDIS_URL, LOG_LEVEL: 'error' });
  const prefix = `bench:gates:${randomBytes(4).toString('hex')}:`;
  const redis = new Redis(REDIS_URL);
  const gates = new RedisGates(new Redis(REDIS_URL), prefix);
  const log = createLogger('error');
  const budget = new Budget(gates, config, log);
  const memoryBudget = new Budget(new MemoryGates(), config, log);
  // Limits raised so that every call is admitted: the full path, every time.
  const open = { rps: 1e6, burst: 1e6, rpm: 1e6, heavyReadsInFlight: 1e6 };
  const callers: Caller[] = Array.from({ length: USERS }, (_, index) => {
    const plan = index % 2 === 0 ? 'pro' : 'basic';
    return {
      accountId: `bench-${index}`,
      keyId: `k${index}`,
      label: 'bench',
      last4: 'abcd',
      planId: plan,
      limits: {
        ...config.plans[plan],
        ...open,
        dailyRequests: plan === 'basic' ? 1e9 : 0,
        monthlyRequests: plan === 'pro' ? 1e9 : 0,
        distinctWalletsPerDay: plan === 'basic' ? 1e6 : -1,
      },
    };
  });
  const call = async (target: Budget, index: number) => {
    const caller = callers[index % USERS]!;
    const heavy = index % 4 === 1;
    const admission = await target.admit(caller, {
      address: '127.0.0.1',
      wallet: index % 4 === 2 ? `0x${(index % 50).toString(16).padStart(40, '0')}` : null,
      heavy,
    });
    admission.release();
  };

  try {
    await redis.ping();
    await timeEach(500, () => redis.ping()); // warm both connections and the script cache
    await timeEach(500, (index) => call(budget, index));
    const figures = {
      ping: { median: [] as number[], p99: [] as number[] },
      gate: { median: [] as number[], p99: [] as number[] },
      memory: { median: [] as number[], p99: [] as number[] },
    };
    for (let round = 0; round < ROUNDS; round++) {
      const ping = await timeEach(CALLS, () => redis.ping());
      const gate = await timeEach(CALLS, (index) => call(budget, round * CALLS + index));
      const memory = await timeEach(CALLS, (index) => call(memoryBudget, round * CALLS + index));
      for (const [name, values] of [
        ['ping', ping],
        ['gate', gate],
        ['memory', memory],
      ] as const) {
        figures[name].median.push(median(values));
        figures[name].p99.push(percentile(values, 0.99));
      }
      console.log(
        `round ${round + 1}: PING median ${median(ping).toFixed(1)} µs p99 ${percentile(ping, 0.99).toFixed(1)} µs; ` +
          `gate (Redis) median ${median(gate).toFixed(1)} µs p99 ${percentile(gate, 0.99).toFixed(1)} µs; ` +
          `gate (memory) median ${median(memory).toFixed(1)} µs`,
      );
    }
    const pingMedian = median(figures.ping.median);
    const gateMedian = median(figures.gate.median);
    const pingP99 = median(figures.ping.p99);
    const gateP99 = median(figures.gate.p99);
    console.log(
      `\n${ROUNDS} rounds × ${CALLS} sequential calls over ${USERS} users (a quarter heavy with release, a quarter trader-scoped on Basic):`,
    );
    console.log(`  Redis PING round trip       median ${pingMedian.toFixed(1)} µs, p99 ${pingP99.toFixed(1)} µs`);
    console.log(`  gate check (Redis, Lua)     median ${gateMedian.toFixed(1)} µs, p99 ${gateP99.toFixed(1)} µs`);
    console.log(
      `  gate check (memory)         median ${median(figures.memory.median).toFixed(1)} µs, p99 ${median(figures.memory.p99).toFixed(1)} µs`,
    );
    const ratio = gateMedian / pingMedian;
    console.log(
      `  ratio gate / PING: median ${ratio.toFixed(2)}×, p99 ${(gateP99 / pingP99).toFixed(2)}× (aim < 2×: ${ratio < 2 ? 'met' : 'missed'})`,
    );
  } finally {
    await deleteKeysWithPrefix(redis, prefix);
    await gates.close();
    await redis.quit();
  }
}

runBenchmark(main);
