/**
 * libuv's thread pool and the embedded store (store.ts, embeddedThreadPoolShortfall): every chDB call
 * holds one of the pool's threads, and libuv reads its size once, from UV_THREADPOOL_SIZE, when the
 * process starts. So the size cannot be fixed in code: every launcher sets it, and a process started
 * without it says so. These tests check the rule and that each launcher follows it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { embeddedThreadPoolShortfall, LAUNCHER_THREAD_POOL_SIZE } from './store.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

describe('the embedded store and libuv thread pool', () => {
  it('needs a thread for each read session, the ingest and command lanes, and four for Node', () => {
    // libuv's default of 4 is short of any embedded store: at least 1 read session + 2 lanes + 4.
    expect(embeddedThreadPoolShortfall({ readPoolSize: 1 })).toEqual({ threads: 4, needed: 7 });
    expect(embeddedThreadPoolShortfall({ readPoolSize: 3, threadPoolSize: 8 })).toEqual({ threads: 8, needed: 9 });
    expect(embeddedThreadPoolShortfall({ readPoolSize: 3, threadPoolSize: 9 })).toBeUndefined();
    expect(embeddedThreadPoolShortfall({ readPoolSize: 10, threadPoolSize: 16 })).toBeUndefined();
    expect(embeddedThreadPoolShortfall({ readPoolSize: 11, threadPoolSize: 16 })).toEqual({ threads: 16, needed: 17 });
    // A server's client talks HTTP: no store call holds a pool thread.
    expect(embeddedThreadPoolShortfall({ url: 'http://clickhouse:8123', readPoolSize: 64 })).toBeUndefined();
  });

  it('reads the size the process started with from UV_THREADPOOL_SIZE, and the launchers size covers every default pool', () => {
    const started = parseConfig({ UV_THREADPOOL_SIZE: '16' }).clickhouse;
    expect(started.threadPoolSize).toBe(16);
    expect(embeddedThreadPoolShortfall(started)).toBeUndefined();
    const bare = parseConfig({ CLICKHOUSE_READ_POOL_SIZE: '3' }).clickhouse;
    expect(bare.threadPoolSize).toBeUndefined();
    expect(embeddedThreadPoolShortfall(bare)).toEqual({ threads: 4, needed: 9 });
    expect(() => parseConfig({ UV_THREADPOOL_SIZE: '0' })).toThrow(/UV_THREADPOOL_SIZE/);
    // The largest embedded default read pool is 5 sessions (4 cores or more).
    expect(embeddedThreadPoolShortfall({ readPoolSize: 5, threadPoolSize: LAUNCHER_THREAD_POOL_SIZE })).toBeUndefined();
  });

  it('is set by every launcher of the program, its tests and its benchmarks, to the same size', () => {
    const scripts = (
      JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    const launchers = Object.entries(scripts).filter(
      ([name]) => name === 'start' || name === 'test' || name === 'test:integration' || name.startsWith('bench:'),
    );
    expect(launchers.map(([name]) => name)).toContain('bench:api');
    for (const [name, command] of launchers) {
      expect(command, name).toMatch(
        new RegExp(`^UV_THREADPOOL_SIZE=\\$\\{UV_THREADPOOL_SIZE:-${LAUNCHER_THREAD_POOL_SIZE}\\} `),
      );
    }
    const dockerfile = readFileSync(path.join(root, 'deploy', 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(new RegExp(`^ENV UV_THREADPOOL_SIZE=${LAUNCHER_THREAD_POOL_SIZE}$`, 'm'));
  });
});
