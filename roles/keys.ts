/**
 * The admin role `keys`: mint, revoke and list the API keys of an account, for operators and demos.
 *
 * It works the way the dashboard does: by publishing `accounts` and `keys` events (through
 * `withPublisher`, so to Kafka when KAFKA_BROKERS is set, else to the in-process log and into the store
 * before it returns). What it needs to decide (how many live keys an account holds, which key to
 * revoke) it reads from the accounts/keys projection of the configured store.
 *
 * A minted key's plaintext is written once, alone on its line, to `stdout`; it never reaches the log,
 * the store or the events (only its SHA-256, label and last four characters travel).
 *
 * Exit codes: 0 done, 1 refused or not found, 2 usage error.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { z } from 'zod';
import { effectivePlan, PLAN_IDS, type Config, type PlanId } from '../config.ts';
import type { Logger } from '../log.ts';
import {
  readAccount,
  readAccountKeys,
  readKeysById,
  type AccountRecord,
  type StoredKey,
} from '../projections/accounts.ts';
import type { Store } from '../projections/store.ts';
import { accountSchema, apiKeySchema } from '../ingest/contract/events.ts';
import { openMigratedStore, withPublisher } from './runtime.ts';
import { publishAccount, publishNewKey } from '../ingest/sources/accounts.ts';

const KEYS_USAGE = `usage: main.ts keys <subcommand> [options]
subcommands:
  mint --user <account_id> [--plan basic|pro|max] --label <label> [--name <display name>] [--founder|--no-founder]
        create or update the account, mint a key and print it once on stdout
        (--plan is required for a new account; an existing account keeps its plan, name and
        founder seat unless given; refused when the account already holds its plan's max_keys)
  revoke --key-id <key_id>
  revoke --user <account_id> --last4 <xxxx>
        revoke a key (publishes it again with revoked_at set)
  list --user <account_id> [--json]
        the account's plan and keys (key_id, label, last4, created_at, revoked or not)
exit codes: 0 done, 1 refused or not found, 2 usage error`;

/** Where the command writes: the plaintext key and listings to `stdout`, human notes to `stderr`. */
export interface KeysOutput {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

export interface KeysOptions {
  /** Clock in ms (tests). */
  now?: () => number;
}

const EXIT_OK = 0;
const EXIT_REFUSED = 1;
const EXIT_USAGE = 2;

class UsageError extends Error {}

class Refusal extends Error {}

const processOutput: KeysOutput = { stdout: process.stdout, stderr: process.stderr };

/** Runs `keys <subcommand> ...` (argv is what follows the role) and returns the exit code. */
export async function runKeys(
  config: Config,
  log: Logger,
  argv: readonly string[],
  output: KeysOutput = processOutput,
  options: KeysOptions = {},
): Promise<number> {
  const [subcommand, ...rest] = argv;
  const now = options.now ?? Date.now;
  const keysLog = log.child({ name: 'keys' });
  try {
    switch (subcommand) {
      case 'mint':
        return await mint(config, keysLog, parseMint(rest), output, now);
      case 'revoke':
        return await revoke(config, keysLog, parseRevoke(rest), output, now);
      case 'list':
        return await list(config, keysLog, parseList(rest), output);
      case 'help':
      case '--help':
      case '-h':
        output.stdout.write(`${KEYS_USAGE}\n`);
        return EXIT_OK;
      default:
        throw new UsageError(
          subcommand === undefined
            ? 'keys needs a subcommand'
            : `unknown keys subcommand ${JSON.stringify(subcommand)}`,
        );
    }
  } catch (error) {
    if (error instanceof UsageError) {
      output.stderr.write(`${error.message}\n${KEYS_USAGE}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof Refusal) {
      output.stderr.write(`${error.message}\n`);
      return EXIT_REFUSED;
    }
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------------
// Arguments

type ParsedValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

function parse(args: readonly string[], options: NonNullable<ParseArgsConfig['options']>): ParsedValues {
  try {
    return parseArgs({ args: [...args], options, strict: true, allowPositionals: false }).values as ParsedValues;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function validated(schema: z.ZodType, flag: string, value: string): string {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new UsageError(`${flag}: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`);
  return parsed.data as string;
}

function accountIdOf(value: string | undefined): string {
  if (value === undefined) throw new UsageError('--user <account_id> is required');
  return validated(accountSchema.shape.account_id, '--user', value);
}

interface MintArgs {
  user: string;
  plan: PlanId | undefined;
  label: string;
  name: string | undefined;
  founder: boolean | undefined;
}

function parseMint(args: readonly string[]): MintArgs {
  const values = parse(args, {
    user: { type: 'string' },
    plan: { type: 'string' },
    label: { type: 'string' },
    name: { type: 'string' },
    founder: { type: 'boolean' },
    'no-founder': { type: 'boolean' },
  });
  const user = accountIdOf(values.user as string | undefined);
  const plan = values.plan as string | undefined;
  if (plan !== undefined && !(PLAN_IDS as readonly string[]).includes(plan))
    throw new UsageError(`--plan must be one of ${PLAN_IDS.join(', ')} (got ${JSON.stringify(plan)})`);
  const rawLabel = values.label as string | undefined;
  if (rawLabel === undefined) throw new UsageError('--label <label> is required');
  const label = validated(apiKeySchema.shape.label, '--label', rawLabel);
  if (label === '') throw new UsageError('--label must not be empty');
  const rawName = values.name as string | undefined;
  const name = rawName === undefined ? undefined : validated(accountSchema.shape.display_name, '--name', rawName);
  if (values.founder && values['no-founder']) throw new UsageError('--founder and --no-founder exclude each other');
  const founder = values.founder ? true : values['no-founder'] ? false : undefined;
  return { user, plan: plan as PlanId | undefined, label, name, founder };
}

type RevokeArgs = { keyId: string; user: string | undefined } | { keyId: undefined; user: string; last4: string };

function parseRevoke(args: readonly string[]): RevokeArgs {
  const values = parse(args, {
    'key-id': { type: 'string' },
    user: { type: 'string' },
    last4: { type: 'string' },
  });
  const keyIdValue = values['key-id'] as string | undefined;
  const userValue = values.user as string | undefined;
  const last4 = values.last4 as string | undefined;
  if (keyIdValue !== undefined) {
    if (last4 !== undefined) throw new UsageError('give either --key-id or --user with --last4, not both');
    const keyId = validated(apiKeySchema.shape.key_id, '--key-id', keyIdValue);
    return { keyId, user: userValue === undefined ? undefined : accountIdOf(userValue) };
  }
  if (userValue === undefined || last4 === undefined)
    throw new UsageError('revoke needs --key-id <key_id>, or --user <account_id> with --last4 <xxxx>');
  if (!/^[0-9A-Za-z]{4}$/.test(last4))
    throw new UsageError('--last4 must be the last four characters of the key (base62)');
  return { keyId: undefined, user: accountIdOf(userValue), last4 };
}

interface ListArgs {
  user: string;
  json: boolean;
}

function parseList(args: readonly string[]): ListArgs {
  const values = parse(args, { user: { type: 'string' }, json: { type: 'boolean' } });
  return { user: accountIdOf(values.user as string | undefined), json: Boolean(values.json) };
}

// ---------------------------------------------------------------------------------------------------
// Reading the projection

/**
 * Runs `work` with the configured store, migrated (a fresh in-process database has no tables yet). The
 * store stays open while `work` publishes, so that the in-process mode reuses the one embedded engine.
 */
async function withStore<T>(config: Config, log: Logger, work: (store: Store) => Promise<T>): Promise<T> {
  const store = await openMigratedStore(config, log);
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

/** A live account (a deleted one counts as absent: minting for it needs --plan again). */
function liveAccount(account: AccountRecord | null): AccountRecord | null {
  return account && !account.deleted ? account : null;
}

function planOf(account: AccountRecord): PlanId {
  if (!(PLAN_IDS as readonly string[]).includes(account.plan)) {
    throw new Refusal(
      `account ${JSON.stringify(account.accountId)} has the unknown plan ${JSON.stringify(account.plan)}; give --plan`,
    );
  }
  return account.plan as PlanId;
}

function isoOf(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
}

function viaKafka(config: Config): boolean {
  return Boolean(config.kafka.brokers && config.kafka.brokers.length > 0);
}

/** In the in-process mode the event is in the store once withPublisher returns: check that it is. */
async function confirmLanded(
  config: Config,
  store: Store,
  keyId: string,
  landed: (key: StoredKey) => boolean,
): Promise<void> {
  if (viaKafka(config)) return;
  const keys = await readKeysById(store, keyId);
  if (!keys.some(landed))
    throw new Error(`the key event of ${keyId} was published but is not in the store; nothing took effect`);
}

/** "Basic Intelligence (plan basic)" or "Pro Intelligence (plan basic, founder seat)". */
function describePlan(config: Config, plan: PlanId, founder: boolean): { effective: PlanId; text: string } {
  const effective = effectivePlan(plan, founder) ?? plan;
  const name = config.plans[effective].name;
  return { effective, text: founder ? `${name} (plan ${plan}, founder seat)` : `${name} (plan ${plan})` };
}

// ---------------------------------------------------------------------------------------------------
// mint

async function mint(
  config: Config,
  log: Logger,
  args: MintArgs,
  output: KeysOutput,
  now: () => number,
): Promise<number> {
  const nowSeconds = Math.floor(now() / 1000);
  return withStore(config, log, async (store) => {
    const stored = await readAccount(store, args.user);
    const existing = liveAccount(stored);
    if (!existing && args.plan === undefined) {
      throw new UsageError(
        `account ${JSON.stringify(args.user)} does not exist yet: --plan basic|pro|max is required to create it`,
      );
    }
    const plan = args.plan ?? planOf(existing!);
    const founder = args.founder ?? existing?.founder ?? false;
    const displayName = args.name ?? existing?.displayName ?? '';
    const { effective, text: planText } = describePlan(config, plan, founder);
    const maxKeys = config.plans[effective].maxKeys;

    const live = (await readAccountKeys(store, args.user)).filter((key) => key.revokedAt === null);
    if (live.length >= maxKeys) {
      log.warn(
        { accountId: args.user, plan, founder, liveKeys: live.length, maxKeys },
        'key refused: the account holds its max_keys',
      );
      throw new Refusal(
        `refused: account ${JSON.stringify(args.user)} on ${planText} already holds ${live.length} live key${live.length === 1 ? '' : 's'}, ` +
          `and the plan allows max_keys ${maxKeys}. Revoke one first (keys revoke --key-id <key_id>; see keys list --user ${args.user}) ` +
          `or move the account to a plan with more keys. Nothing was published.`,
      );
    }

    const changed =
      !existing || existing.plan !== plan || existing.founder !== founder || existing.displayName !== displayName;
    const minted = await withPublisher(config, log, async ({ publisher }) => {
      if (changed) {
        // A new version must beat the stored one even within the same second.
        const version = Math.max(nowSeconds, (stored?.version ?? -1) + 1);
        await publishAccount(publisher, { accountId: args.user, plan, displayName, founder, version });
      }
      return publishNewKey(publisher, args.user, args.label, nowSeconds);
    });
    // Checked before the plaintext is shown: a key that never landed must not be handed out.
    await confirmLanded(config, store, minted.keyId, (key) => key.revokedAt === null);

    log.info(
      {
        accountId: args.user,
        keyId: minted.keyId,
        last4: minted.last4,
        label: args.label,
        plan,
        founder,
        accountPublished: changed,
      },
      'key minted',
    );
    output.stdout.write(`${minted.plaintext}\n`);
    output.stderr.write(
      `minted ${minted.keyId} (label ${JSON.stringify(args.label)}, last4 ${minted.last4}) for account ${JSON.stringify(args.user)} on ${planText}; ` +
        `key ${live.length + 1} of max_keys ${maxKeys}.\n` +
        `The key above is shown only once: store it now. Only its SHA-256 is kept.\n` +
        (viaKafka(config) ? 'Published to Kafka: the key authenticates once the ingest workers have landed it.\n' : ''),
    );
    return EXIT_OK;
  });
}

// ---------------------------------------------------------------------------------------------------
// revoke

async function findKeyToRevoke(store: Store, args: RevokeArgs): Promise<StoredKey> {
  if (args.keyId !== undefined) {
    const found = (await readKeysById(store, args.keyId)).filter(
      (key) => args.user === undefined || key.accountId === args.user,
    );
    const owner = args.user === undefined ? '' : ` of account ${JSON.stringify(args.user)}`;
    if (found.length === 0)
      throw new Refusal(`no key ${JSON.stringify(args.keyId)}${owner}; see keys list --user <account_id>`);
    return found.find((key) => key.revokedAt === null) ?? found[0]!;
  }
  const matching = (await readAccountKeys(store, args.user)).filter((key) => key.last4 === args.last4);
  if (matching.length === 0)
    throw new Refusal(
      `account ${JSON.stringify(args.user)} has no key ending in ${args.last4}; see keys list --user ${args.user}`,
    );
  const live = matching.filter((key) => key.revokedAt === null);
  if (live.length > 1) {
    const candidates = live.map((key) => `${key.keyId} (label ${JSON.stringify(key.label)})`).join(', ');
    throw new Refusal(
      `account ${JSON.stringify(args.user)} has ${live.length} live keys ending in ${args.last4}: ${candidates}; revoke one with --key-id`,
    );
  }
  return live[0] ?? matching[0]!;
}

async function revoke(
  config: Config,
  log: Logger,
  args: RevokeArgs,
  output: KeysOutput,
  now: () => number,
): Promise<number> {
  const nowSeconds = Math.floor(now() / 1000);
  return withStore(config, log, async (store) => {
    const key = await findKeyToRevoke(store, args);
    const description = `${key.keyId} (label ${JSON.stringify(key.label)}, last4 ${key.last4}) of account ${JSON.stringify(key.accountId)}`;
    if (key.revokedAt !== null) {
      output.stderr.write(`${description} was already revoked at ${isoOf(key.revokedAt)}; nothing published.\n`);
      return EXIT_OK;
    }
    const version = Math.max(nowSeconds, key.version + 1);
    await withPublisher(config, log, async ({ publisher }) => {
      await publisher.publish('keys', [
        {
          key_id: key.keyId,
          account_id: key.accountId,
          key_sha256: key.keySha256,
          label: key.label,
          last4: key.last4,
          created_at: key.createdAt,
          revoked_at: Math.max(nowSeconds, key.createdAt),
          // The replacing version must beat the stored one even within the same second.
          version,
        },
      ]);
    });
    await confirmLanded(config, store, key.keyId, (stored) => stored.revokedAt !== null && stored.version === version);
    log.info({ accountId: key.accountId, keyId: key.keyId, last4: key.last4, label: key.label }, 'key revoked');
    output.stdout.write(`revoked ${description}\n`);
    if (viaKafka(config))
      output.stderr.write(
        'Published to Kafka: the key stops authenticating once the ingest workers have landed it (and the API key cache expires).\n',
      );
    return EXIT_OK;
  });
}

// ---------------------------------------------------------------------------------------------------
// list

async function list(config: Config, log: Logger, args: ListArgs, output: KeysOutput): Promise<number> {
  return withStore(config, log, async (store) => {
    const account = await readAccount(store, args.user);
    const keys = await readAccountKeys(store, args.user);
    if (!account && keys.length === 0) throw new Refusal(`no account ${JSON.stringify(args.user)} and no keys for it`);

    const planInfo =
      account && (PLAN_IDS as readonly string[]).includes(account.plan)
        ? describePlan(config, account.plan as PlanId, account.founder)
        : null;
    const maxKeys = planInfo ? config.plans[planInfo.effective].maxKeys : null;
    const liveCount = keys.filter((key) => key.revokedAt === null).length;

    if (args.json) {
      const body = {
        account: account && {
          account_id: account.accountId,
          plan: account.plan,
          founder: account.founder,
          display_name: account.displayName,
          deleted: account.deleted,
          effective_plan: planInfo ? config.plans[planInfo.effective].name : null,
          max_keys: maxKeys,
        },
        keys: keys.map((key) => ({
          key_id: key.keyId,
          label: key.label,
          last4: key.last4,
          created_at: isoOf(key.createdAt),
          revoked: key.revokedAt !== null,
          revoked_at: key.revokedAt === null ? null : isoOf(key.revokedAt),
        })),
      };
      output.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
      return EXIT_OK;
    }

    const lines: string[] = [];
    if (account) {
      const name = account.displayName === '' ? '' : ` ${JSON.stringify(account.displayName)}`;
      lines.push(
        `account ${account.accountId}${name}: ${planInfo?.text ?? `unknown plan ${JSON.stringify(account.plan)}`}${account.deleted ? ' [deleted]' : ''}`,
      );
    } else {
      lines.push(`account ${args.user}: no account event (keys without an account do not authenticate)`);
    }
    lines.push(
      `keys: ${liveCount} live${maxKeys === null ? '' : ` of max_keys ${maxKeys}`}, ${keys.length - liveCount} revoked`,
    );
    if (keys.length > 0) {
      const rows = [
        ['KEY_ID', 'LABEL', 'LAST4', 'CREATED_AT', 'STATUS'],
        ...keys.map((key) => [
          key.keyId,
          key.label,
          key.last4,
          isoOf(key.createdAt),
          key.revokedAt === null ? 'active' : `revoked ${isoOf(key.revokedAt)}`,
        ]),
      ];
      const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
      for (const row of rows)
        lines.push(
          row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  '),
        );
    }
    output.stdout.write(`${lines.join('\n')}\n`);
    return EXIT_OK;
  });
}
