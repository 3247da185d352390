/**
 * Renders the topic table of docs/events.md from the registry and the zod schemas, so that the
 * documentation of the event contract cannot drift from the contract (a unit test compares them;
 * `npm run docs` rewrites the section).
 */
import { z } from 'zod';
import { DEAD_LETTER_TOPIC, TOPICS, TOPIC_IDS } from './topics.ts';

interface JsonSchema {
  type?: string;
  const?: unknown;
  enum?: unknown[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  default?: unknown;
}

const PATTERNS: Record<string, string> = {
  '^0x[0-9a-fA-F]{64}$': '0x + 64 hex',
  '^0x[0-9a-fA-F]{40}$': '0x + 40 hex',
  '^[0-9a-fA-F]{64}$': '64 hex',
};

function typeOf(schema: JsonSchema): string {
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(' \\| ');
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return alternatives.map(typeOf).join(' \\| ');
  let text = schema.type ?? 'any';
  if (schema.pattern) text = PATTERNS[schema.pattern] ?? `string /${schema.pattern}/`;
  if (schema.type === 'number' || schema.type === 'integer') {
    const low = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? `>${schema.exclusiveMinimum}` : undefined);
    if (low !== undefined && schema.maximum !== undefined && schema.maximum <= 1) text += ` ${low}..${schema.maximum}`;
    else if (schema.exclusiveMinimum === 0) text += ' > 0';
    else if (schema.minimum === 0) text += ' ≥ 0';
  }
  return text;
}

function fieldsOf(schema: JsonSchema): string {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {})
    .map(([name, field]) => `\`${name}\`${required.has(name) ? '' : '?'} ${typeOf(field)}`)
    .join(', ');
}

/** The topic table of docs/events.md (Markdown). */
export function describeTopics(): string {
  const rows = ['| Topic | Key | What | Fields (`?` optional) |', '|---|---|---|---|'];
  for (const topicId of TOPIC_IDS) {
    const spec = TOPICS[topicId];
    const schema = z.toJSONSchema(spec.schema, { io: 'input' }) as JsonSchema;
    const variants = schema.oneOf ?? [schema];
    const fields = variants.map(fieldsOf).join('<br>or: ');
    rows.push(`| \`${spec.name}\` | ${spec.keyName} | ${spec.description} | ${fields} |`);
  }
  rows.push(
    `| \`${DEAD_LETTER_TOPIC}\` | the original key | Events that failed to parse or validate: the original bytes as the value; headers \`dlq.reason\`, \`dlq.topic\`, \`dlq.partition\`, \`dlq.offset\`. | (the original message) |`,
  );
  return rows.join('\n');
}
