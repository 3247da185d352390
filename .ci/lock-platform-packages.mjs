// chdb lists one optional native package per platform; this registry serves only the linux-x64 one,
// so `npm install` leaves the others out of package-lock.json and `npm ci` then refuses the lock.
// Run after regenerating the lock: `node .ci/lock-platform-packages.mjs`. It adds the missing entries
// as optional, platform-bound placeholders (never installed on a machine of another platform).
import { readFileSync, writeFileSync } from 'node:fs';

const lockPath = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
const chdb = lock.packages['node_modules/chdb'];
const platforms = { 'lib-darwin-arm64': ['darwin', 'arm64'], 'lib-darwin-x64': ['darwin', 'x64'], 'lib-linux-arm64-gnu': ['linux', 'arm64', 'glibc'], 'lib-linux-x64-gnu': ['linux', 'x64', 'glibc'] };
let added = 0;
for (const [name, version] of Object.entries(chdb.optionalDependencies ?? {})) {
  const key = `node_modules/${name}`;
  const platform = platforms[name.replace('@chdb/', '')];
  if (lock.packages[key] || !platform) continue;
  const [os, cpu, libc] = platform;
  lock.packages[key] = { version, cpu: [cpu], license: 'Apache-2.0', optional: true, os: [os], ...(libc ? { libc: [libc] } : {}) };
  added += 1;
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} placeholder entries`);
