/**
 * The admin role `keys` (roles/keys.ts), run in process on the in-process log: keys minted
 * by it authenticate on the read API with the plan's limits, max_keys is enforced per plan (a founder
 * seat counts as Pro), a revocation takes effect at once (a key cache of 0 s), and the plaintext is
 * shown once on stdout and nowhere else (not in the log, not in a listing). One child-process run
 * checks the dispatch of main.ts and that its log stays off stdout.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../config.ts';
import { runKeys, type KeysOutput } from '../roles/keys.ts';
import { createLogger, type Logger } from '../log.ts';
import { bodyOf, inProcessConfig, startTestApi, type TestApi } from './harness/api.ts';
import { REPO_ROOT } from './harness/child.ts';

const KEY = /^tak_[0-9A-Za-z]{40}$/;
const ANY_KEY = /tak_[0-9A-Za-z]{40}/g;
const SHA256_HEX = /\b[0-9a-f]{64}\b/i;

const config: Config = inProcessConfig('keys', {}, { api: { keyCacheSeconds: 0 } });

/** Everything the command logged (pino JSON lines at trace level, the in-process worker's included). */
let logText = '';
const log: Logger = createLogger('trace', { write: (line: string) => void (logText += line) });
/** Every plaintext any run printed. */
const plaintexts: string[] = [];

let api: TestApi;
let clockMs = Date.UTC(2026, 0, 1);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function keys(...argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const output: KeysOutput = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  };
  const code = await runKeys(config, log, argv, output);
  for (const match of stdout.matchAll(ANY_KEY)) plaintexts.push(match[0]);
  return { code, stdout, stderr };
}

/** Mints and returns the plaintext, asserting it is printed exactly once, alone, on stdout. */
async function mint(...argv: string[]): Promise<{ key: string; run: Run }> {
  const run = await keys('mint', ...argv);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout.match(ANY_KEY)).toHaveLength(1);
  const key = run.stdout.trimEnd();
  expect(key).toMatch(KEY);
  expect(run.stdout).toBe(`${key}\n`);
  expect(run.stderr).toMatch(/shown only once/);
  expect(run.stderr).not.toContain(key);
  return { key, run };
}

async function me(key: string): Promise<{
  status: number;
  body: { plan?: string; limits?: { max_keys: number }; key?: { label: string; last4: string } };
}> {
  const response = await api.get('me', { authorization: `Bearer ${key}` });
  return { status: response.statusCode, body: bodyOf(response) as never };
}

/** Rows of both tables, versions included: a refusal must publish nothing. */
async function landedRows(): Promise<number> {
  const [row] = await api.store.query<{ rows: number }>(
    'SELECT (SELECT count() FROM {db:Identifier}.accounts) + (SELECT count() FROM {db:Identifier}.api_keys) AS rows',
  );
  return Number(row!.rows);
}

interface Listing {
  account: {
    account_id: string;
    plan: string;
    founder: boolean;
    display_name: string;
    effective_plan: string;
    max_keys: number;
  } | null;
  keys: {
    key_id: string;
    label: string;
    last4: string;
    created_at: string;
    revoked: boolean;
    revoked_at: string | null;
  }[];
}

async function listing(user: string): Promise<Listing> {
  const run = await keys('list', '--user', user, '--json');
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Listing;
}

beforeAll(async () => {
  // The gates' clock moves 3 s per admission: a Basic bucket (0.5/s) refills one token every call.
  api = await startTestApi(config, {
    now: () => Math.floor(Date.now() / 1000),
    keys: { basic: '', pro: '', max: '' },
    gatesClockMs: () => (clockMs += 3000),
  });
});

afterAll(async () => {
  if (api) {
    await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api.close();
  }
});

describe('keys mint', () => {
  it('mints a Basic key that /me answers with its plan, label and last4', async () => {
    const { key } = await mint('--user', 'ada', '--plan', 'basic', '--label', 'ada laptop', '--name', 'Ada L');
    const answer = await me(key);
    expect(answer.status).toBe(200);
    expect(answer.body.plan).toBe('Basic Intelligence');
    expect(answer.body.limits?.max_keys).toBe(1);
    expect(answer.body.key).toEqual({ label: 'ada laptop', last4: key.slice(-4) });
  });

  it('refuses a second Basic key (exit 1, names max_keys 1) and publishes nothing', async () => {
    const before = await landedRows();
    const run = await keys('mint', '--user', 'ada', '--label', 'ada phone');
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/max_keys 1\b/);
    expect(run.stderr).toMatch(/Basic Intelligence/);
    expect(await landedRows()).toBe(before);
    // Naming the plan again changes nothing either.
    const again = await keys('mint', '--user', 'ada', '--plan', 'basic', '--label', 'ada phone');
    expect(again.code).toBe(1);
    expect(await landedRows()).toBe(before);
  });

  it('gives Pro three keys, each live, and refuses the fourth', async () => {
    const minted: string[] = [];
    for (const label of ['pro one', 'pro two', 'pro three']) {
      minted.push((await mint('--user', 'pat', '--plan', 'pro', '--label', label)).key);
    }
    expect(new Set(minted).size).toBe(3);
    for (const [index, key] of minted.entries()) {
      const answer = await me(key);
      expect(answer.status).toBe(200);
      expect(answer.body.plan).toBe('Pro Intelligence');
      expect(answer.body.key).toEqual({ label: ['pro one', 'pro two', 'pro three'][index], last4: key.slice(-4) });
    }
    const before = await landedRows();
    const fourth = await keys('mint', '--user', 'pat', '--label', 'pro four');
    expect(fourth.code).toBe(1);
    expect(fourth.stdout).toBe('');
    expect(fourth.stderr).toMatch(/max_keys 3\b/);
    expect(fourth.stderr).toMatch(/Pro Intelligence/);
    expect(await landedRows()).toBe(before);
  });

  it('gives a founder seat on plan basic the Pro limits: three keys, /me says Pro Intelligence', async () => {
    const minted: string[] = [];
    minted.push((await mint('--user', 'fay', '--plan', 'basic', '--founder', '--label', 'founder one')).key);
    // The seat is kept when --founder is not repeated.
    minted.push((await mint('--user', 'fay', '--label', 'founder two')).key);
    minted.push((await mint('--user', 'fay', '--plan', 'basic', '--label', 'founder three')).key);
    for (const key of minted) {
      const answer = await me(key);
      expect(answer.status).toBe(200);
      expect(answer.body.plan).toBe('Pro Intelligence');
      expect(answer.body.limits?.max_keys).toBe(3);
    }
    const fourth = await keys('mint', '--user', 'fay', '--label', 'founder four');
    expect(fourth.code).toBe(1);
    expect(fourth.stderr).toMatch(/max_keys 3\b/);
    expect(fourth.stderr).toMatch(/founder seat/);
    const account = (await listing('fay')).account;
    expect(account).toMatchObject({ plan: 'basic', founder: true, effective_plan: 'Pro Intelligence', max_keys: 3 });
  });

  it('keeps the plan and display name of an existing account unless given, and needs --plan for a new one', async () => {
    const created = await mint('--user', 'max-user', '--plan', 'max', '--label', 'max one', '--name', 'Max M');
    expect((await me(created.key)).body.plan).toBe('Max Intelligence');
    await mint('--user', 'max-user', '--label', 'max two');
    expect((await listing('max-user')).account).toMatchObject({ plan: 'max', display_name: 'Max M', max_keys: 6 });
    await mint('--user', 'max-user', '--label', 'max three', '--name', 'Max Renamed');
    expect((await listing('max-user')).account).toMatchObject({ plan: 'max', display_name: 'Max Renamed' });

    const missingPlan = await keys('mint', '--user', 'nobody-yet', '--label', 'x');
    expect(missingPlan.code).toBe(2);
    expect(missingPlan.stderr).toMatch(/--plan/);
    expect((await keys('list', '--user', 'nobody-yet')).code).toBe(1);
  });
});

describe('keys revoke', () => {
  it('revokes by key id: /me answers 401 at once; the Basic user can then mint again', async () => {
    const { key } = await mint('--user', 'bo', '--plan', 'basic', '--label', 'bo first');
    expect((await me(key)).status).toBe(200);
    const [first] = (await listing('bo')).keys;
    expect(first).toMatchObject({ label: 'bo first', last4: key.slice(-4), revoked: false });

    const run = await keys('revoke', '--key-id', first!.key_id);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(first!.key_id);
    expect((await me(key)).status).toBe(401);

    const second = await mint('--user', 'bo', '--label', 'bo second');
    const answer = await me(second.key);
    expect(answer.status).toBe(200);
    expect(answer.body.key).toEqual({ label: 'bo second', last4: second.key.slice(-4) });
    expect((await me(key)).status).toBe(401);

    // Revoking it again publishes nothing and says so.
    const before = await landedRows();
    const again = await keys('revoke', '--key-id', first!.key_id);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/already revoked/);
    expect(await landedRows()).toBe(before);
  });

  it('revokes by user and last4, leaving the other keys live', async () => {
    const one = await mint('--user', 'cy', '--plan', 'pro', '--label', 'cy one');
    const two = await mint('--user', 'cy', '--label', 'cy two');
    const run = await keys('revoke', '--user', 'cy', '--last4', one.key.slice(-4));
    expect(run.code, run.stderr).toBe(0);
    expect((await me(one.key)).status).toBe(401);
    expect((await me(two.key)).status).toBe(200);
  });

  it('answers an unknown key with exit 1 and a message', async () => {
    const byId = await keys('revoke', '--key-id', 'key_doesNotExist00');
    expect(byId.code).toBe(1);
    expect(byId.stderr).toMatch(/no key "key_doesNotExist00"/);
    const byLast4 = await keys('revoke', '--user', 'ada', '--last4', 'zzzz');
    expect(byLast4.code).toBe(1);
    expect(byLast4.stderr).toMatch(/no key ending in zzzz/);
  });
});

describe('keys list', () => {
  it('shows plan, labels, last4 and revoked state, never a hash or a plaintext', async () => {
    const one = await mint('--user', 'di', '--plan', 'pro', '--label', 'di one');
    const two = await mint('--user', 'di', '--label', 'di two');
    expect((await keys('revoke', '--user', 'di', '--last4', one.key.slice(-4))).code).toBe(0);

    const text = await keys('list', '--user', 'di');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/Pro Intelligence/);
    expect(text.stdout).toMatch(/1 live of max_keys 3, 1 revoked/);
    const lineOf = (label: string) => text.stdout.split('\n').find((line) => line.includes(label)) ?? '';
    expect(lineOf('di one')).toContain(one.key.slice(-4));
    expect(lineOf('di one')).toMatch(/revoked \d{4}-\d\d-\d\dT/);
    expect(lineOf('di two')).toContain(two.key.slice(-4));
    expect(lineOf('di two')).toMatch(/active$/);

    const json = await keys('list', '--user', 'di', '--json');
    const body = JSON.parse(json.stdout) as Listing;
    // Oldest first; keys of the same second in key_id order.
    expect(body.keys.map((key) => [key.label, key.last4, key.revoked]).sort()).toEqual([
      ['di one', one.key.slice(-4), true],
      ['di two', two.key.slice(-4), false],
    ]);

    for (const output of [text.stdout, json.stdout]) {
      expect(output).not.toMatch(ANY_KEY);
      expect(output).not.toMatch(SHA256_HEX);
      for (const key of [one.key, two.key])
        expect(output).not.toContain(createHash('sha256').update(key).digest('hex'));
    }
  });
});

describe('usage', () => {
  it('answers usage errors with exit 2', async () => {
    for (const argv of [
      [],
      ['bogus'],
      ['mint', '--user', 'ada'],
      ['mint', '--user', 'ada', '--plan', 'gold', '--label', 'x'],
      ['mint', '--user', 'bad id!', '--plan', 'basic', '--label', 'x'],
      ['revoke'],
      ['revoke', '--user', 'ada'],
      ['list'],
      ['list', '--user', 'ada', '--bogus'],
    ]) {
      const run = await keys(...argv);
      expect(run.code, argv.join(' ')).toBe(2);
      expect(run.stderr).toMatch(/usage: main\.ts keys/);
      expect(run.stdout).toBe('');
    }
  });
});

describe('secrecy', () => {
  it('never logs a plaintext key', () => {
    expect(plaintexts.length).toBeGreaterThanOrEqual(15);
    expect(logText).toMatch(/key minted/);
    expect(logText).toMatch(/key revoked/);
    for (const key of plaintexts) expect(logText).not.toContain(key);
    expect(logText).not.toMatch(ANY_KEY);
  });
});

describe('main.ts keys (child process)', () => {
  const run = promisify(execFile);

  async function main(argv: string[], dataDir: string): Promise<Run> {
    try {
      const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'main.ts', 'keys', ...argv], {
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: dataDir, LOG_LEVEL: 'info' },
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  it('prints only the key on stdout (the log goes to stderr), and exits 2 on a usage error', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'keys-cli-'));
    try {
      const minted = await main(['mint', '--user', 'child', '--plan', 'basic', '--label', 'child key'], dataDir);
      expect(minted.code, minted.stderr).toBe(0);
      expect(minted.stdout).toMatch(/^tak_[0-9A-Za-z]{40}\n$/);
      const key = minted.stdout.trimEnd();
      expect(minted.stderr).toMatch(/"msg":"key minted"/);
      expect(minted.stderr).toMatch(/shown only once/);
      expect(minted.stderr).not.toContain(key);

      const refused = await main(['mint', '--user', 'child', '--label', 'another'], dataDir);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');

      const usage = await main(['mint', '--plan', 'basic'], dataDir);
      expect(usage.code).toBe(2);
      expect(usage.stderr).toMatch(/--user <account_id> is required/);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
