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
    account: row.plan === null || row.deleted ? null : { plan: row.plan, founder: Boolean(row.founder), displayName: row.display_name ?? '' },
  }));
}
