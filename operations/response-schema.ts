/**
 * Answers leave through their zod schema (REST's serializer, MCP's structuredContent). When an answer
 * does not match it, that is a bug on our side: the client gets the contract's opaque 500 (`internal`
 * on MCP), and the log gets everything needed to find it: the route or tool, and for each mismatch the
 * path in the body, what the schema wanted and the offending value.
 */
import { z } from 'zod';

export interface SchemaMismatch {
  /** Where in the body, e.g. `summary.usd_share_last_tenth`. */
  path: string;
  code: string;
  message: string;
  /** The offending value as JSON (cut at 200 characters). */
  value: string;
}

/** An answer refused by its own response schema. */
export class ResponseSchemaError extends Error {
  constructor(
    /** `GET /api/agent/v1/traders/:trader/...` or `tool get_market_summary`. */
    readonly route: string,
    readonly mismatches: SchemaMismatch[],
  ) {
    super(
      `${route}: the answer does not match its response schema: ${mismatches.map((m) => `${m.path || '(body)'} = ${m.value}: ${m.message}`).join('; ')}`,
    );
    this.name = 'ResponseSchemaError';
  }
}

const MAX_VALUE_CHARS = 200;

function valueText(value: unknown): string {
  let text: string;
  try {
    text = value === undefined ? 'undefined' : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : text;
}

type Issue = z.core.$ZodIssue;

/** The leaf mismatches of zod issues (issues reported with their input); of a union, the closest branch's. */
function mismatchesOf(issues: readonly Issue[], prefix: PropertyKey[] = []): SchemaMismatch[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const closest = issue.errors.reduce((best, branch) => (branch.length < best.length ? branch : best));
      return mismatchesOf(closest, path);
    }
    return [
      { path: path.map(String).join('.'), code: issue.code, message: issue.message, value: valueText(issue.input) },
    ];
  });
}

/** The answer as its schema encodes it; a mismatch throws ResponseSchemaError naming `route` and the values. */
export function encodeResponse(schema: z.core.$ZodType, body: unknown, route: string): unknown {
  const result = z.safeEncode(schema, body, { reportInput: true });
  if (!result.success) throw new ResponseSchemaError(route, mismatchesOf(result.error.issues));
  return result.data;
}

/**
 * Fastify's serializer compiler (in place of fastify-type-provider-zod's, which drops the values): every
 * response body is encoded through its route's schema, and a mismatch names the route and the values.
 */
export function responseSerializerCompiler({ schema, method, url }: { schema: unknown; method: string; url: string }) {
  const route = `${method} ${url}`;
  if (!(schema instanceof z.core.$ZodType)) throw new Error(`${route}: a response schema that is not a zod schema`);
  return (body: unknown): string => JSON.stringify(encodeResponse(schema, body, route));
}
