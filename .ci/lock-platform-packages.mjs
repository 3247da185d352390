// chdb and @biomejs/biome list one optional native package per platform; this registry serves only some
// of them (chdb: linux-x64; biome: the linux glibc ones), so `npm install` leaves the others out of
// package-lock.json and `npm ci` then refuses the lock. Run after regenerating the lock:
// `node .ci/lock-platform-packages.mjs`. It adds the missing entries as optional, platform-bound
// placeholders (never installed on a machine of another platform).
import { readFileSync, writeFileSync } from 'node:fs';

const lockPath = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(lockPath, 'utf8'));

/** Per parent package: its license, whether it is a dev dependency, and [os, cpu, libc?] of each platform package. */
const parents = {
  chdb: {
    license: 'Apache-2.0',
    dev: false,
    platforms: {
      '@chdb/lib-darwin-arm64': ['darwin', 'arm64'],
      '@chdb/lib-darwin-x64': ['darwin', 'x64'],
      '@chdb/lib-linux-arm64-gnu': ['linux', 'arm64', 'glibc'],
      '@chdb/lib-linux-x64-gnu': ['linux', 'x64', 'glibc'],
    },
  },
  '@biomejs/biome': {
    license: 'MIT OR Apache-2.0',
    dev: true,
    platforms: {
      '@biomejs/cli-android-arm64': ['android', 'arm64'],
      '@biomejs/cli-android-x64': ['android', 'x64'],
      '@biomejs/cli-darwin-arm64': ['darwin', 'arm64'],
      '@biomejs/cli-darwin-x64': ['darwin', 'x64'],
      '@biomejs/cli-linux-arm64': ['linux', 'arm64', 'glibc'],
      '@biomejs/cli-linux-arm64-musl': ['linux', 'arm64', 'musl'],
      '@biomejs/cli-linux-x64': ['linux', 'x64', 'glibc'],
      '@biomejs/cli-linux-x64-musl': ['linux', 'x64', 'musl'],
      '@biomejs/cli-win32-arm64': ['win32', 'arm64'],
      '@biomejs/cli-win32-x64': ['win32', 'x64'],
    },
  },
};

let added = 0;
for (const [parent, { license, dev, platforms }] of Object.entries(parents)) {
  const entry = lock.packages[`node_modules/${parent}`];
  for (const [name, version] of Object.entries(entry?.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    const platform = platforms[name];
    if (lock.packages[key] || !platform) continue;
    const [os, cpu, libc] = platform;
    lock.packages[key] = {
      version,
      cpu: [cpu],
      ...(dev ? { dev: true } : {}),
      license,
      optional: true,
      os: [os],
      ...(libc ? { libc: [libc] } : {}),
    };
    added += 1;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} placeholder entries`);
