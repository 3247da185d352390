/**
 * The ClickHouse cluster variant of the migrations, generated from the same single-node SQL (the one
 * source; single-node stays the default and the one tested end to end). With CLICKHOUSE_CLUSTER set:
 *
 *   CREATE TABLE t (…) ENGINE = ReplacingMergeTree(v) …   becomes
 *     t_local ON CLUSTER: the same columns, keys, TTL and settings on ReplicatedReplacingMergeTree
 *       ('/clickhouse/tables/{shard}/{database}/t_local', '{replica}', v) (non_replicated_deduplication_window
 *       becomes replicated_deduplication_window: the same insert-token deduplication, now replicated), and
 *     t ON CLUSTER AS t_local ENGINE = Distributed(cluster, db, t_local, cityHash64(wallet)): the name every
 *       read and insert already uses. Sharded by wallet; tables without a wallet by market (condition_id),
 *       then by account (account_id), else spread at random (small tables).
 *   CREATE MATERIALIZED VIEW v TO t AS SELECT … FROM s   reads s_local and writes t_local ON CLUSTER: a
 *     view fires on the shard where its source rows land, and its target shards by the same key (a wallet's
 *     fills and everything derived from them live on the wallet's shard).
 *   ALTER TABLE t …   alters t_local ON CLUSTER, and the Distributed t too when columns change.
 *   DROP TABLE / VIEW   ON CLUSTER (a table: both t and t_local).
 *
 * Tables are learnt from the CREATE TABLE statements as the migrations go, so new migration files need no
 * list kept here; a statement of a kind not handled above is refused with its text (add a rule).
 */

export interface ClusterOptions {
  /** The cluster name of `remote_servers` (CLICKHOUSE_CLUSTER). */
  cluster: string;
}

const DB = '{db:Identifier}';
const TABLE_NAME = String.raw`\{db:Identifier\}\.(\w+)`;
const REPLICATION_PATH = '/clickhouse/tables/{shard}/{database}';
/** Sharding keys in order of preference: the first column a table has. */
const SHARDING_COLUMNS = ['wallet', 'condition_id', 'account_id'] as const;
const COLUMN_CHANGE = /^\s*(ADD|DROP|MODIFY|RENAME|COMMENT)\s+COLUMN\b/i;

/** The index just past the parenthesis that closes the one at `open` (quotes and nesting respected). */
function closingParenthesis(text: string, open: number): number {
  let depth = 0;
  let quote: string | null = null;
  for (let index = open; index < text.length; index++) {
    const char = text[index]!;
    if (quote) {
      if (char === '\\') index++;
      else if (char === quote) quote = null;
      continue;
    }
    if (char === "'" || char === '`' || char === '"') quote = char;
    else if (char === '(') depth++;
    else if (char === ')' && --depth === 0) return index + 1;
  }
  throw new Error(`unbalanced parentheses in: ${text.slice(open, open + 200)}`);
}

/** Column names of a column list `(name Type …, …)`, skipping indexes, projections and constraints. */
function columnNames(columnList: string): string[] {
  const inner = columnList.slice(1, -1);
  const names: string[] = [];
  let depth = 0;
  let start = 0;
  const definitions: string[] = [];
  for (let index = 0; index <= inner.length; index++) {
    const char = inner[index];
    if (char === '(') depth++;
    else if (char === ')') depth--;
    else if ((char === ',' && depth === 0) || index === inner.length) {
      definitions.push(inner.slice(start, index).trim());
      start = index + 1;
    }
  }
  for (const definition of definitions) {
    const name = /^`?(\w+)`?\s/.exec(definition)?.[1];
    if (name && !/^(INDEX|PROJECTION|CONSTRAINT)$/i.test(name)) names.push(name);
  }
  return names;
}

export interface ParsedCreateTable {
  name: string;
  ifNotExists: boolean;
  columnList: string;
  engine: string;
  engineArguments: string | null;
  /** ORDER BY, PARTITION BY, TTL, SETTINGS…: everything after the engine. */
  rest: string;
}

function parseCreateTable(statement: string): ParsedCreateTable | null {
  const head = new RegExp(String.raw`^CREATE\s+TABLE\s+(IF\s+NOT\s+EXISTS\s+)?${TABLE_NAME}\s*\(`, 'i').exec(statement);
  if (!head) return null;
  const open = head[0].length - 1;
  const close = closingParenthesis(statement, open);
  const afterColumns = statement.slice(close);
  const engine = /^\s*ENGINE\s*=\s*(\w+)/i.exec(afterColumns);
  if (!engine) throw new Error(`CREATE TABLE ${head[2]} without an ENGINE clause right after its columns`);
  let restStart = engine[0].length;
  let engineArguments: string | null = null;
  if (afterColumns[restStart] === '(') {
    const end = closingParenthesis(afterColumns, restStart);
    engineArguments = afterColumns.slice(restStart + 1, end - 1).trim();
    restStart = end;
  }
  return {
    name: head[2]!,
    ifNotExists: head[1] !== undefined,
    columnList: statement.slice(open, close),
    engine: engine[1]!,
    engineArguments: engineArguments === '' ? null : engineArguments,
    rest: afterColumns.slice(restStart),
  };
}

function localName(table: string): string {
  return `${table}_local`;
}

function quoted(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The sharding key of a table with these columns. */
function shardingKey(columns: readonly string[]): string {
  const column = SHARDING_COLUMNS.find((candidate) => columns.includes(candidate));
  return column ? `cityHash64(${column})` : 'rand()';
}

/**
 * Turns the single-node migrations into cluster DDL. Stateful: it learns the tables as statements go,
 * so feed it every statement of every migration, in order (the ledger first).
 */
export class ClusterDdl {
  /** Tables created so far (their names, single-node), with their columns. */
  readonly tables = new Map<string, string[]>();
  private readonly onCluster: string;

  constructor(private readonly options: ClusterOptions) {
    if (!/^[\w.-]+$/.test(options.cluster))
      throw new Error(`cluster name ${JSON.stringify(options.cluster)} is not a plain name`);
    this.onCluster = `ON CLUSTER ${quoted(options.cluster)}`;
  }

  createDatabase(database: string): string {
    return `CREATE DATABASE IF NOT EXISTS \`${database}\` ${this.onCluster}`;
  }

  /** The cluster statements of one single-node statement. */
  statements(statement: string): string[] {
    const text = statement.trim();
    const table = parseCreateTable(text);
    if (table) return this.createTable(table);
    if (/^CREATE\s+MATERIALIZED\s+VIEW\b/i.test(text)) return [this.materializedView(text)];
    if (/^CREATE\s+(OR\s+REPLACE\s+)?VIEW\b/i.test(text))
      return [
        this.addOnCluster(
          text,
          /^(CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(?:IF\s+NOT\s+EXISTS\s+)?\{db:Identifier\}\.\w+)/i,
        ),
      ];
    if (/^ALTER\s+TABLE\b/i.test(text)) return this.alterTable(text);
    if (/^DROP\s+(TABLE|VIEW)\b/i.test(text)) return this.drop(text);
    if (/^INSERT\s+INTO\b/i.test(text)) return [text]; // data statements go through the Distributed tables
    throw new Error(
      `the cluster variant has no rule for this migration statement (add one in projections/cluster.ts): ${text.slice(0, 200)}`,
    );
  }

  private createTable(table: ParsedCreateTable): string[] {
    const columns = columnNames(table.columnList);
    this.tables.set(table.name, columns);
    const local = localName(table.name);
    if (/^Replicated/i.test(table.engine) || table.engine === 'Distributed') {
      throw new Error(
        `migration table ${table.name} names a cluster engine (${table.engine}): migrations are written for one node`,
      );
    }
    const engineArguments = [
      quoted(`${REPLICATION_PATH}/${local}`),
      quoted('{replica}'),
      ...(table.engineArguments ? [table.engineArguments] : []),
    ].join(', ');
    const rest = table.rest.replace(/\bnon_replicated_deduplication_window\b/g, 'replicated_deduplication_window');
    const ifNotExists = table.ifNotExists ? 'IF NOT EXISTS ' : '';
    return [
      `CREATE TABLE ${ifNotExists}${DB}.${local} ${this.onCluster}\n${table.columnList}\nENGINE = Replicated${table.engine}(${engineArguments})${rest}`,
      `CREATE TABLE ${ifNotExists}${DB}.${table.name} ${this.onCluster}\nAS ${DB}.${local}\nENGINE = Distributed(${quoted(this.options.cluster)}, ${DB}, ${quoted(local)}, ${shardingKey(columns)})`,
    ];
  }

  /** Every known table a statement names, renamed to its local table. */
  private toLocal(text: string): string {
    return text.replace(new RegExp(TABLE_NAME, 'g'), (whole, name: string) =>
      this.tables.has(name) ? `${DB}.${localName(name)}` : whole,
    );
  }

  private materializedView(text: string): string {
    const head = new RegExp(
      String.raw`^(CREATE\s+MATERIALIZED\s+VIEW\s+(?:IF\s+NOT\s+EXISTS\s+)?${TABLE_NAME})`,
      'i',
    ).exec(text);
    if (!head) throw new Error(`unreadable materialized view: ${text.slice(0, 200)}`);
    if (!/\bTO\s+\{db:Identifier\}\.\w+/i.test(text))
      throw new Error(`materialized view ${head[2]} without TO: give it an explicit target table`);
    return `${head[1]} ${this.onCluster}${this.toLocal(text.slice(head[1]!.length))}`;
  }

  private alterTable(text: string): string[] {
    const head = new RegExp(String.raw`^ALTER\s+TABLE\s+${TABLE_NAME}`, 'i').exec(text);
    if (!head) throw new Error(`unreadable ALTER TABLE: ${text.slice(0, 200)}`);
    const name = head[1]!;
    if (!this.tables.has(name)) throw new Error(`ALTER TABLE ${name}: not a table created by the migrations`);
    const action = text.slice(head[0].length);
    const statements = [`ALTER TABLE ${DB}.${localName(name)} ${this.onCluster}${action}`];
    // The Distributed table mirrors the columns (not indexes, TTLs or settings, which it has not).
    if (COLUMN_CHANGE.test(action)) statements.push(`ALTER TABLE ${DB}.${name} ${this.onCluster}${action}`);
    const added = /^\s*ADD\s+COLUMN\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)`?/i.exec(action);
    if (added) this.tables.get(name)!.push(added[1]!);
    return statements;
  }

  private drop(text: string): string[] {
    const head = new RegExp(String.raw`^DROP\s+(TABLE|VIEW)\s+(IF\s+EXISTS\s+)?${TABLE_NAME}\s*$`, 'i').exec(text);
    if (!head) throw new Error(`unreadable DROP: ${text.slice(0, 200)}`);
    const [, kind, ifExists = '', name] = head;
    if (kind!.toUpperCase() === 'VIEW' || !this.tables.has(name!))
      return [`DROP ${kind} ${ifExists}${DB}.${name} ${this.onCluster} SYNC`];
    this.tables.delete(name!);
    return [
      `DROP TABLE ${ifExists}${DB}.${name} ${this.onCluster} SYNC`,
      `DROP TABLE ${ifExists}${DB}.${localName(name!)} ${this.onCluster} SYNC`,
    ];
  }

  private addOnCluster(text: string, head: RegExp): string {
    const match = head.exec(text);
    if (!match) throw new Error(`unreadable statement: ${text.slice(0, 200)}`);
    return `${match[1]} ${this.onCluster}${text.slice(match[1]!.length)}`;
  }
}
