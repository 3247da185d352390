/**
 * The embedded mode's state files: the demo keys of `demo-keys.json` are made sure of in the store at
 * every start (a crash between writing the file and ingesting the keys cost them for good before), and an
 * unusable state file stops `main.ts all` with its name and reason instead of starting a new world.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withPublisher } from '../roles/runtime.ts';
import { ensureDemoAccounts, mintApiKey, readDemoKeys, sha256Hex } from '../ingest/sources/accounts.ts';
import { createLogger } from '../log.ts';
import { openMigratedStore } from '../roles/runtime.ts';
import type { Store } from '../projections/store.ts';
import { inProcessConfig, startTestApi, type TestApi } from './harness/api.ts';
import { REPO_ROOT } from './harness/child.ts';

const run = promisify(execFile);
const NOW = 1_790_000_000;

describe('demo keys after a crash', () => {
  const config = inProcessConfig('demokeys', {}, { api: { keyCacheSeconds: 0 } });
  const log = createLogger('error');
  let store: Store;
  let api: TestApi | undefined;

  beforeAll(async () => {
    store = await openMigratedStore(config, log);
  });
  afterAll(async () => {
    await api?.close();
    await store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await store.close();
  });

  it('publishes the keys of an existing demo-keys.json the store lacks, once; they then authenticate', async () => {
    // The state a kill in the first seconds left: the file is written, its key events never landed.
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-demokeys-'));
    const keys = { basic: mintApiKey().plaintext, pro: mintApiKey().plaintext, max: mintApiKey().plaintext };
    await writeFile(path.join(dataDir, 'demo-keys.json'), JSON.stringify(keys));

    const first = await withPublisher(config, log, ({ publisher }) =>
      readDemoKeys(dataDir).then((existing) => ensureDemoAccounts(publisher, store, dataDir, NOW, existing)),
    );
    expect(first.created).toBe(false);
    expect(first.keys).toEqual(keys);
    expect(first.published).toHaveLength(6);

    // Raw rows (no FINAL): one account and one key per plan.
    const rows = async () =>
      store.query<{ account_id: string; key_sha256: string }>(
        'SELECT account_id, key_sha256 FROM {db:Identifier}.api_keys ORDER BY account_id',
      );
    const expected = ['basic', 'max', 'pro'].map((plan) => ({
      account_id: `demo-${plan}`,
      key_sha256: sha256Hex(keys[plan as keyof typeof keys]),
    }));
    expect(await rows()).toEqual(expected);

    // The next start finds everything and publishes nothing (idempotent): still one row each.
    const second = await withPublisher(config, log, ({ publisher }) =>
      readDemoKeys(dataDir).then((existing) => ensureDemoAccounts(publisher, store, dataDir, NOW + 60, existing)),
    );
    expect(second.published).toEqual([]);
    expect(await rows()).toEqual(expected);
    const accounts = await store.query<{ account_id: string; plan: string }>(
      'SELECT account_id, plan FROM {db:Identifier}.accounts ORDER BY account_id',
    );
    expect(accounts).toEqual([
      { account_id: 'demo-basic', plan: 'basic' },
      { account_id: 'demo-max', plan: 'max' },
      { account_id: 'demo-pro', plan: 'pro' },
    ]);

    api = await startTestApi(config, { keys, now: () => NOW });
    for (const plan of ['basic', 'pro', 'max'] as const) {
      const me = await api.get('me', { plan });
      expect(me.statusCode, `${plan}: ${me.body}`).toBe(200);
      expect((JSON.parse(me.body) as { key: { last4: string } }).key.last4).toBe(keys[plan].slice(-4));
    }
  });
});

describe('main.ts all with an unusable state file', () => {
  const start = async (dataDir: string, environment: Record<string, string> = {}) => {
    try {
      const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'main.ts', 'all'], {
        cwd: REPO_ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          DATA_DIR: dataDir,
          PORT: '0',
          LOG_LEVEL: 'error',
          ...environment,
        },
        timeout: 60_000,
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  };
  const validKeys = () =>
    JSON.stringify({ basic: mintApiKey().plaintext, pro: mintApiKey().plaintext, max: mintApiKey().plaintext });

  it.each([
    ['an empty simulator-state.json (a kill during an in-place write)', 'simulator-state.json', '', 'is empty'],
    [
      'a truncated simulator-state.json',
      'simulator-state.json',
      '{"seed":20261121,"genesisTs":17',
      'is not valid JSON',
    ],
    [
      'a simulator-state.json of another world',
      'simulator-state.json',
      '{"seed":1,"genesisTs":1790000000,"resumeFromTs":1790003600}',
      'SIM_SEED=1',
    ],
    ['an empty demo-keys.json', 'demo-keys.json', '', 'is empty'],
    [
      'a demo-keys.json without the pro key',
      'demo-keys.json',
      JSON.stringify({ basic: mintApiKey().plaintext, max: mintApiKey().plaintext }),
      'pro',
    ],
  ])(
    'stops with %s, naming the file and the reason, and starts no new world',
    async (_title, file, content, reason) => {
      const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ta-state-'));
      await writeFile(path.join(dataDir, file), content);
      if (file !== 'demo-keys.json') await writeFile(path.join(dataDir, 'demo-keys.json'), validKeys());
      const result = await start(dataDir);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(path.join(dataDir, file));
      expect(result.stderr).toContain(reason);
      expect(result.stdout).not.toContain('listening');
      // Nothing was created or rewritten: no store, the file as it was.
      expect((await readdir(dataDir)).sort()).toEqual(
        ['demo-keys.json', 'simulator-state.json'].filter((name) => name === file || name === 'demo-keys.json').sort(),
      );
      expect(await readFile(path.join(dataDir, file), 'utf8')).toBe(content);
    },
  );
});
