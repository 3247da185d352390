/**
 * Who a trader identifier names. `{trader}` is a 0x wallet (any case), a profile URL of the upstream
 * provider (`https://polymarket.com/profile/0x…`, `https://polymarket.com/@name`), or a display name.
 * A string that starts with `0x` but is not 0x + 40 hex is a malformed wallet, never tried as a name.
 */
import { z } from 'zod';
import type { Store } from './store.ts';

export const traderSchema = z.object({
  wallet: z.string().meta({ description: 'Canonical wallet: 0x + 40 lower-case hex.' }),
  name: z.string().meta({ description: 'Display name (empty when the trader has none).' }),
});
export type Trader = z.infer<typeof traderSchema>;

export type TraderIdentifier =
  | { kind: 'wallet'; wallet: string }
  | { kind: 'name'; name: string }
  | { kind: 'invalid_wallet'; input: string };

const WALLET = /^0x[0-9a-f]{40}$/i;
const HEX_PREFIX = /^0x/i;
/**
 * A profile URL of the upstream provider: optional http(s) scheme, optional `www.`, host
 * polymarket.com, then the path (query and fragment ignored). Scheme and host are case-insensitive.
 */
const PROFILE_URL = /^(?:https?:\/\/)?(?:www\.)?polymarket\.com(\/[^?#]*)?(?:[?#].*)?$/i;
/** `/profile/<x>` or `/@<name>`, with an optional trailing slash. */
const PROFILE_PATH = /^\/profile\/([^/]+)\/?$/;
const HANDLE_PATH = /^\/@([^/]+)\/?$/;

function walletOrInvalid(candidate: string, input: string): TraderIdentifier {
  return WALLET.test(candidate)
    ? { kind: 'wallet', wallet: candidate.toLowerCase() }
    : { kind: 'invalid_wallet', input };
}

function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    // Not valid percent-encoding: the name is taken as written.
    return raw;
  }
}

/** The name or wallet a profile URL points at; undefined when the string is not such a URL. */
function parseProfileUrl(text: string): TraderIdentifier | undefined {
  const url = PROFILE_URL.exec(text);
  if (!url) return undefined;
  const path = url[1] ?? '';
  const profile = PROFILE_PATH.exec(path);
  const handle = profile ? undefined : HANDLE_PATH.exec(path);
  const segment = profile?.[1] ?? handle?.[1];
  if (segment === undefined) return undefined;
  if (profile) {
    if (HEX_PREFIX.test(segment)) return walletOrInvalid(segment, text);
    if (!segment.startsWith('@')) return undefined;
  }
  const name = decodeName(profile ? segment.slice(1) : segment).trim();
  return name === '' ? undefined : { kind: 'name', name };
}

/**
 * Pure: classifies an identifier (wallets are lower-cased; URLs are unwrapped). The input is trimmed
 * first. `0x`/`0X` + 40 hex is a wallet; any other string starting with `0x`/`0X` is `invalid_wallet`
 * (never a name). A polymarket.com profile URL (scheme and `www.` optional) yields its wallet
 * (`/profile/0x…`, malformed → `invalid_wallet`) or its percent-decoded name (`/profile/@name`,
 * `/@name`). Anything else is a display name, taken as written (an empty input is the empty name).
 */
export function parseTraderIdentifier(input: string): TraderIdentifier {
  const text = input.trim();
  if (HEX_PREFIX.test(text)) return walletOrInvalid(text, text);
  return parseProfileUrl(text) ?? { kind: 'name', name: text };
}

/** The wallet's newest name (ReplacingMergeTree(as_of)'s rule, by the primary key, without FINAL). */
const READ_NAME = `
SELECT name
FROM {db:Identifier}.trader_names
WHERE wallet = {wallet:String}
ORDER BY as_of DESC
LIMIT 1`;

/** The current display name of a wallet ('' when none is known). */
export async function readTraderName(store: Store, wallet: string): Promise<string> {
  return (await store.query<{ name: string }>(READ_NAME, { wallet }))[0]?.name ?? '';
}

/**
 * The index holds every name a wallet ever had (keyed by its lower-case form); a candidate counts only
 * when its current name (trader_names FINAL; the filter applies after FINAL) still matches. Among
 * several, the most recently named wins, then the smallest wallet.
 */
const FIND_WALLET_BY_NAME = `
SELECT wallet, name
FROM {db:Identifier}.trader_names FINAL
WHERE wallet IN (
    SELECT wallet FROM {db:Identifier}.trader_name_index
    WHERE name_key = lowerUTF8({name:String})
)
  AND lowerUTF8(name) = lowerUTF8({name:String})
ORDER BY as_of DESC, wallet
LIMIT 1`;

/** The wallet whose current display name equals `name` (case-insensitive); null when none. */
export async function findWalletByName(store: Store, name: string): Promise<Trader | null> {
  if (name === '') return null;
  const [row] = await store.query<Trader>(FIND_WALLET_BY_NAME, { name });
  return row ?? null;
}
