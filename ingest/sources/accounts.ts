/**
 * Accounts and API keys as events: what the dashboard publishes, and what the admin CLI and the demo
 * publish for operators. A key's plaintext exists only here, at minting, and is handed to the caller
 * once; the log and the store only ever see its SHA-256.
 */
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import type { PlanId } from '../../config.ts';
import { readAccount, readKeysByHash } from '../../projections/accounts.ts';
import type { Store } from '../../projections/store.ts';
import type { EventSink } from '../publisher.ts';
import { readStateFile, writeFileAtomic } from '../state-file.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const API_KEY_PREFIX = 'tak_';
const SECRET_LENGTH = 40;
export const API_KEY_PATTERN = /^tak_[0-9A-Za-z]{40}$/;

/** Uniform base62 characters: bytes ≥ 248 are rejected so that every character is equally likely. */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export interface MintedKey {
  plaintext: string;
  keyId: string;
  sha256: string;
  last4: string;
}

export function mintApiKey(): MintedKey {
  const plaintext = `${API_KEY_PREFIX}${randomBase62(SECRET_LENGTH)}`;
  return { plaintext, keyId: `key_${randomBase62(16)}`, sha256: sha256Hex(plaintext), last4: plaintext.slice(-4) };
}

/** Publishes an account (or a new version of it) and returns nothing secret. */
export async function publishAccount(
  sink: EventSink,
  account: { accountId: string; plan: PlanId; displayName: string; founder?: boolean; version: number },
): Promise<void> {
  await sink.publish('accounts', [
    {
      account_id: account.accountId,
      plan: account.plan,
      founder: account.founder ?? false,
      display_name: account.displayName,
      version: account.version,
      deleted: false,
    },
  ]);
}

/** Mints a key for an account, publishes its hash, and returns the plaintext (shown once). */
export async function publishNewKey(
  sink: EventSink,
  accountId: string,
  label: string,
  nowSeconds: number,
): Promise<MintedKey> {
  const key = mintApiKey();
  await sink.publish('keys', [
    {
      key_id: key.keyId,
      account_id: accountId,
      key_sha256: key.sha256,
      label,
      last4: key.last4,
      created_at: nowSeconds,
      revoked_at: null,
      version: nowSeconds,
    },
  ]);
  return key;
}

export type DemoKeys = Record<PlanId, string>;

const DEMO_PLANS = ['basic', 'pro', 'max'] as const satisfies readonly PlanId[];

const demoKeysSchema = z.object(
  Object.fromEntries(
    DEMO_PLANS.map((plan) => [plan, z.string().regex(API_KEY_PATTERN, 'not an API key (tak_ + 40 base62 characters)')]),
  ) as Record<(typeof DEMO_PLANS)[number], z.ZodString>,
);

export const DEMO_ACCOUNT_IDS: readonly string[] = DEMO_PLANS.map((plan) => `demo-${plan}`);

function demoKeysFile(dataDir: string): string {
  return path.join(dataDir, 'demo-keys.json');
}

/** The demo keys of `DATA_DIR/demo-keys.json`: undefined before the first start, StateFileError when unusable. */
export async function readDemoKeys(dataDir: string): Promise<DemoKeys | undefined> {
  return readStateFile(demoKeysFile(dataDir), demoKeysSchema);
}

/** A demo key's id, derived from its hash: a key published again after a crash is the same key, not a second one. */
function demoKeyId(keySha256: string): string {
  return `key_demo${keySha256.slice(0, 12)}`;
}

export interface DemoAccounts {
  keys: DemoKeys;
  file: string;
  /** The keys were minted by this start (no demo-keys.json before). */
  created: boolean;
  /** Accounts and keys this start published because the store did not hold them (e.g. after a crash). */
  published: string[];
}

/**
 * The demo accounts of the embedded mode: one Basic, one Pro and one Max, each with one key. The keys
 * live in `DATA_DIR/demo-keys.json` (written atomically on first start, reused afterwards); every start
 * makes sure the store holds each account and key, and publishes again only what it lacks, so a crash
 * between writing the file and ingesting the key events costs nothing. A key the store holds, even
 * revoked by an operator, is left as it is. `existing` is what readDemoKeys found.
 */
export async function ensureDemoAccounts(
  sink: EventSink,
  store: Store,
  dataDir: string,
  nowSeconds: number,
  existing: DemoKeys | undefined,
): Promise<DemoAccounts> {
  const file = demoKeysFile(dataDir);
  let keys: DemoKeys;
  if (existing) {
    keys = existing;
  } else {
    keys = { basic: mintApiKey().plaintext, pro: mintApiKey().plaintext, max: mintApiKey().plaintext };
    // The file first: if the process dies now, the next start publishes these keys (below), never new ones.
    await writeFileAtomic(file, `${JSON.stringify(keys, null, 2)}\n`, 0o600);
  }
  const published: string[] = [];
  for (const plan of DEMO_PLANS) {
    const accountId = `demo-${plan}`;
    if (!(await readAccount(store, accountId))) {
      await publishAccount(sink, { accountId, plan, displayName: `Demo ${plan}`, version: nowSeconds });
      published.push(`account ${accountId}`);
    }
    const keySha256 = sha256Hex(keys[plan]);
    if ((await readKeysByHash(store, keySha256)).length === 0) {
      await sink.publish('keys', [
        {
          key_id: demoKeyId(keySha256),
          account_id: accountId,
          key_sha256: keySha256,
          label: `demo ${plan} key`,
          last4: keys[plan].slice(-4),
          created_at: nowSeconds,
          revoked_at: null,
          version: nowSeconds,
        },
      ]);
      published.push(`key of ${accountId}`);
    }
  }
  return { keys, file, created: !existing, published };
}
