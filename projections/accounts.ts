/**
 * API keys and the accounts they belong to, as the `accounts` and `keys` topics left them. A key is
 * looked up by its SHA-256 only (the plaintext never reaches the store).
 */
import type { Store } from './store.ts';

export interface KeyRecord {
  keySha256: string;
  keyId: string;
  accountId: string;
  label: string;
  last4: string;
  revoked: boolean;
  /** Null when the account is unknown or deleted. */
  account: { plan: string; founder: boolean; displayName: string } | null;
}

const READ_KEY = `
SELECT
    k.key_sha256 AS key_sha256,
    k.key_id AS key_id,
    k.account_id AS account_id,
    k.label AS label,
    k.last4 AS last4,
    k.revoked_at IS NOT NULL AS revoked,
    a.plan AS plan,
    a.founder AS founder,
    a.display_name AS display_name,
    a.deleted AS deleted
FROM
(
    SELECT key_sha256, key_id, account_id, label, last4, revoked_at
    FROM {db:Identifier}.api_keys FINAL
    WHERE key_sha256 = {key_sha256:String}
) AS k
LEFT JOIN
(
    SELECT account_id, plan, founder, display_name, deleted
    FROM {db:Identifier}.accounts FINAL
    WHERE account_id IN (SELECT account_id FROM {db:Identifier}.api_keys WHERE key_sha256 = {key_sha256:String})
) AS a ON a.account_id = k.account_id
SETTINGS join_use_nulls = 1`;

interface KeyRow {
  key_sha256: string;
  key_id: string;
  account_id: string;
  label: string;
  last4: string;
  revoked: number | boolean;
  plan: string | null;
  founder: boolean | null;
  display_name: string | null;
  deleted: boolean | null;
}

/** Every key stored under this hash (normally one); the caller compares hashes in constant time. */
export async function readKeysByHash(store: Store, keySha256: string): Promise<KeyRecord[]> {
  const rows = await store.query<KeyRow>(READ_KEY, { key_sha256: keySha256 });
  return rows.map((row) => ({
    keySha256: row.key_sha256,
    keyId: row.key_id,
    accountId: row.account_id,
    label: row.label,
    last4: row.last4,
    revoked: Boolean(row.revoked),
    account:
      row.plan === null || row.deleted
        ? null
        : { plan: row.plan, founder: Boolean(row.founder), displayName: row.display_name ?? '' },
  }));
}

/** An account as the `accounts` topic left it (the highest version). */
export interface AccountRecord {
  accountId: string;
  plan: string;
  founder: boolean;
  displayName: string;
  version: number;
  deleted: boolean;
}

const READ_ACCOUNT = `
SELECT account_id, plan, founder, display_name, version, deleted
FROM {db:Identifier}.accounts FINAL
WHERE account_id = {account_id:String}`;

interface AccountRow {
  account_id: string;
  plan: string;
  founder: boolean | number;
  display_name: string;
  version: number | string;
  deleted: boolean | number;
}

/** The account's latest version (deleted ones included, flagged), or null when it was never published. */
export async function readAccount(store: Store, accountId: string): Promise<AccountRecord | null> {
  const rows = await store.query<AccountRow>(READ_ACCOUNT, { account_id: accountId });
  const row = rows[0];
  if (!row) return null;
  return {
    accountId: row.account_id,
    plan: row.plan,
    founder: Boolean(row.founder),
    displayName: row.display_name,
    version: Number(row.version),
    deleted: Boolean(row.deleted),
  };
}

/**
 * A key's latest version, for the admin CLI. The hash is here only so that a revocation can publish the
 * same key again (the table is ordered by it); it is never shown.
 */
export interface StoredKey {
  keyId: string;
  accountId: string;
  keySha256: string;
  label: string;
  last4: string;
  createdAt: number;
  /** Null while the key is live. */
  revokedAt: number | null;
  version: number;
}

const KEY_COLUMNS = `key_id, account_id, key_sha256, label, last4, created_at, revoked_at, version`;

const READ_ACCOUNT_KEYS = `
SELECT ${KEY_COLUMNS}
FROM {db:Identifier}.api_keys FINAL
WHERE account_id = {account_id:String}
ORDER BY created_at, key_id`;

const READ_KEY_BY_ID = `
SELECT ${KEY_COLUMNS}
FROM {db:Identifier}.api_keys FINAL
WHERE key_id = {key_id:String}
ORDER BY created_at, key_sha256`;

interface StoredKeyRow {
  key_id: string;
  account_id: string;
  key_sha256: string;
  label: string;
  last4: string;
  created_at: number;
  revoked_at: number | null;
  version: number | string;
}

function toStoredKey(row: StoredKeyRow): StoredKey {
  return {
    keyId: row.key_id,
    accountId: row.account_id,
    keySha256: row.key_sha256,
    label: row.label,
    last4: row.last4,
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    version: Number(row.version),
  };
}

/** Every key of an account (revoked ones included), oldest first. */
export async function readAccountKeys(store: Store, accountId: string): Promise<StoredKey[]> {
  return (await store.query<StoredKeyRow>(READ_ACCOUNT_KEYS, { account_id: accountId })).map(toStoredKey);
}

/** The key (normally one row) with this id. */
export async function readKeysById(store: Store, keyId: string): Promise<StoredKey[]> {
  return (await store.query<StoredKeyRow>(READ_KEY_BY_ID, { key_id: keyId })).map(toStoredKey);
}
