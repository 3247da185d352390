/**
 * Accounts and API keys as events: what the dashboard publishes, and what the admin CLI and the demo
 * publish for operators. A key's plaintext exists only here, at minting, and is handed to the caller
 * once; the log and the store only ever see its SHA-256.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { PlanId } from '../../config.ts';
import type { EventSink } from '../publisher.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const API_KEY_PREFIX = 'tak_';
const SECRET_LENGTH = 40;
export const API_KEY_PATTERN = /^tak_[0-9A-Za-z]{40}$/;

/** Uniform base62 characters: bytes ≥ 248 are rejected so that every character is equally likely. */
export function randomBase62(length: number): string {
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

const DEMO_PLANS: readonly PlanId[] = ['basic', 'pro', 'max'];

/**
 * The demo accounts of the embedded mode: one Basic, one Pro and one Max, each with one key. The keys
 * are written to `DATA_DIR/demo-keys.json` on first start and reused afterwards.
 */
export async function ensureDemoAccounts(sink: EventSink, dataDir: string, nowSeconds: number): Promise<{ keys: DemoKeys; file: string; created: boolean }> {
  const file = path.join(dataDir, 'demo-keys.json');
  try {
    const existing = JSON.parse(await readFile(file, 'utf8')) as Partial<DemoKeys>;
    if (DEMO_PLANS.every((plan) => typeof existing[plan] === 'string' && API_KEY_PATTERN.test(existing[plan]))) {
      return { keys: existing as DemoKeys, file, created: false };
    }
  } catch {
    // No file yet (or an unreadable one): mint a fresh set below.
  }
  const keys = {} as DemoKeys;
  for (const plan of DEMO_PLANS) {
    const accountId = `demo-${plan}`;
    await publishAccount(sink, { accountId, plan, displayName: `Demo ${plan}`, version: nowSeconds });
    keys[plan] = (await publishNewKey(sink, accountId, `demo ${plan} key`, nowSeconds)).plaintext;
  }
  await writeFile(file, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 });
  return { keys, file, created: true };
}
