/** The API-wide description an agent reads first in /openapi.json: conventions, profit rules, errors. */
export const API_DESCRIPTION = `Read-only data plane for software agents: who a prediction-market trader really is. Every read is a GET under /api/agent/v1 with "Authorization: Bearer <API_KEY>" (never a key in the query string; a missing, unknown or revoked key is 401 {error: "unauthorized"}).

Conventions on every endpoint:
- {trader} is a 0x wallet (any case), a profile URL of the upstream provider (https://polymarket.com/profile/0x…, https://polymarket.com/@name; URL-encoded), or a display name. Answers echo the canonical lower-case wallet and the name. A 0x string of the wrong hex length is 400 invalid_wallet and is never tried as a name. An unknown name is 404 trader_not_found; a valid but unknown wallet gets a zeroed card.
- {condition_id} is 0x + 64 hex (from the markets list or top-markets); anything else is 400 invalid_condition_id; an unknown market, or one the trader never traded, is 404 market_not_found.
- Timestamps are integer epoch seconds. Money is USD in fields ending _usd. Prices are UP-normalized (0 to 1, the probability of token 1): for a token-2 trade the price is 1 − the price paid.
- Paging: cursors are opaque and forward-only. The first request carries no cursor; pass next_cursor back until it is null. A malformed cursor is 400 bad_cursor; a well-formed forged one silently returns page 1. limit must be ≥ 1 (0 is 400 bad_limit); above the maximum it is clamped.
- Parameter type errors are 422 {detail: [{loc, msg, type, input?, ctx?}]}.
- Resolved market summaries, charts and tapes are immutable: strong ETag, Cache-Control immutable, If-None-Match → 304 (a 304 still counts one call). Open markets are cached for a few seconds. The trader card is Cache-Control: no-store.

Interpretation rules for profit figures:
1. The one profit to quote for a trader is upstream.pnl (the provider's model, realized plus unrealized, full account history).
2. A resolved market's pnl_usd is a result. An open market's pnl_usd is cash flow (money deployed counts as spent); its standing is pnl_marked_usd.
3. pnl_usd includes mint, split and redemption legs that never appear as fills; it cannot be rebuilt from visible fills.
4. A resolved market is pinned at the winner level: 1.00 when token 1 won, else 0.00.

Errors are JSON {error, message} (message written to be relayed to a human): 400 invalid_wallet, invalid_condition_id, bad_cursor, bad_limit; 401 unauthorized; 403 depth_gated and wallet_quota (plan walls: do not retry); 404 trader_not_found, market_not_found; 422 validation; 429 rate_limited and busy (transient: retry after retry_after seconds), daily_limit and monthly_limit (quota spent: relay the message and stop), too_many_auth_failures; 503 upstream_offline (pnl-series); 504 query_timeout. A 429 consumes no call; 400, 403, 404 and 304 consume one.`;
