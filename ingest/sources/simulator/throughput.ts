/**
 * Measures the simulator's emit throughput into a no-op sink and its volume per simulated day.
 *   npx tsx ingest/sources/simulator/throughput.ts [days=1] [traders=120] [intensity=1] [seed=20261121]
 */
import type { EventSink } from '../../publisher.ts';
import { createSimulator } from './index.ts';
import { countTotal } from './output.ts';

const [days = 1, traders = 120, intensity = 1, seed = 20261121] = process.argv.slice(2).map(Number);
const noopSink: EventSink = { publish: async () => undefined };

const simulator = createSimulator({ seed, traders, intensity });
// A fixed, whole-day window, so that runs compare.
const fromTs = 1_767_225_600; // 2026-01-01T00:00:00Z
const toTs = fromTs + Math.round(days * 86_400);
const started = process.hrtime.bigint();
const cpuStarted = process.cpuUsage();
const counts = await simulator.emit(fromTs, toTs, noopSink);
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
// CPU time as well: on a shared machine wall time also measures the neighbours.
const cpu = process.cpuUsage(cpuStarted);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
const events = countTotal(counts);
const perDay = (count: number) => Math.round(count / days);
process.stdout.write(
  `${JSON.stringify({
    days,
    traders,
    intensity,
    seconds: Number(seconds.toFixed(2)),
    events,
    eventsPerSecond: Math.round(events / seconds),
    cpuSeconds: Number(cpuSeconds.toFixed(2)),
    eventsPerCpuSecond: Math.round(events / cpuSeconds),
    perDay: Object.fromEntries(Object.entries(counts).map(([key, count]) => [key, perDay(count)])),
    heapUsedMb: Math.round(process.memoryUsage().heapUsed / 1e6),
  }, null, 2)}\n`,
);
