/**
 * What every tool shares: its definition (name, schemas, hints, the operation it calls), and the one
 * way a tool call runs: through the same gates as REST (admitCall, the `trader` argument counted as a
 * wallet on trader-scoped tools), then the REST route's operation, then the REST 200 schema (which
 * strips undeclared fields, as REST's serializer does). Every refusal, wall or failure comes back as a
 * tool result with `isError: true`, never as a JSON-RPC error: its text is the REST `message`, its
 * structuredContent the REST error body `{error, message, ...extra}`.
 */
import type { CallToolResult, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Caller } from '../operations/auth.ts';
import { admitCall, type AdmittedCall, type Call, type RouteContext } from '../operations/context.ts';
import { errorBodySchema, toApiError } from '../operations/errors.ts';
import { encodeResponse } from '../operations/response-schema.ts';
import type { Logger } from '../log.ts';

/** One MCP exchange (one HTTP request: stateless), as the tools see it. */
export interface McpSession {
  context: RouteContext;
  caller: Caller;
  /** The client address (the gates block addresses after repeated authentication failures). */
  address: string;
  /** Aborted when the HTTP exchange ends: a heavy-read slot comes back at once. */
  signal: AbortSignal;
  log: Logger;
}

export interface ToolDefinition<Input extends z.ZodObject, Output extends z.ZodObject> {
  name: string;
  title: string;
  /** Written for a model choosing tools: what it answers, what it costs, how to keep it small. */
  description: string;
  input: Input;
  /** The REST route's 200 schema (single source). */
  output: Output;
  /** Reads the trader of the `trader` argument: Basic counts its wallet toward the distinct-wallet cap. */
  traderScoped: boolean;
  /** Takes a slot of the admission lane while it runs (none of today's tools do). */
  heavy?: boolean;
  /** The tool's `_meta` in tools/list (the MCP App that draws its result: mcp/resources). */
  meta?: Record<string, unknown>;
  /** The REST route's operation. */
  run(context: RouteContext, call: Call, args: z.output<Input>): Promise<z.output<Output>> | z.output<Output>;
}

/** A tool with its types erased, ready to register on any server. */
export interface Tool {
  name: string;
  register(server: McpServer, session: McpSession): void;
}

/**
 * The output schema a client sees: the REST 200 body, or the contract's error body. MCP clients of SDK
 * v1 validate structuredContent against the output schema even on `isError` results (the server side
 * skips that check), so the listed schema admits both. The server still checks every success against
 * the REST schema itself (the clone keeps its definition; only its JSON Schema is this union: zod
 * takes `_zod.toJSONSchema` for the whole schema, through `toJSONSchema` as through the Standard
 * Schema `~standard.jsonSchema` the 2.x SDK lists with).
 */
function listedOutputSchema<Output extends z.ZodObject>(output: Output): Output {
  const json = {
    type: 'object',
    anyOf: [jsonSchemaOf(output), jsonSchemaOf(errorBodySchema)],
  };
  // A copy of the definition, not a derived schema: toJSONSchema would otherwise also walk the parent.
  const listed = output.clone({ ...output._zod.def });
  // A fresh copy each time: toJSONSchema finalizes (mutates) the object it is handed.
  listed._zod.toJSONSchema = () => structuredClone(json);
  return listed;
}

/** The output-side JSON Schema (draft 2020-12, the dialect the 2.x SDK lists every schema in) of a zod schema, to nest in another. */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'output' }) as Record<
    string,
    unknown
  >;
  // Nested, a definition would no longer resolve; the response schemas have none (every part inlined).
  if ('definitions' in json || '$defs' in json)
    throw new Error('an MCP output schema with definitions cannot be nested');
  return withoutClosedTupleItems(json) as Record<string, unknown>;
}

/**
 * A closed tuple in 2020-12 is `{prefixItems: [...], items: false, maxItems: n}`. A draft-07 validator
 * (the v1 SDK's client, which 2025-era clients run, reads the schema as draft 7 whatever `$schema` says)
 * takes `items: false` as "no item at all" and would refuse every non-empty tuple (a pnl series, a
 * chart's points). Without `items: false` the schema means the same in 2020-12 (`maxItems` still
 * closes the tuple) and a draft-07 validator checks the length and skips `prefixItems`.
 */
function withoutClosedTupleItems(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutClosedTupleItems);
  if (node === null || typeof node !== 'object') return node;
  const entries = Object.entries(node).filter(
    ([key, value]) => !(key === 'items' && value === false && 'prefixItems' in node && 'maxItems' in node),
  );
  return Object.fromEntries(entries.map(([key, value]) => [key, withoutClosedTupleItems(value)]));
}

export function defineTool<Input extends z.ZodObject, Output extends z.ZodObject>(
  definition: ToolDefinition<Input, Output>,
): Tool {
  const outputSchema = listedOutputSchema(definition.output);
  return {
    name: definition.name,
    register(server, session) {
      server.registerTool(
        definition.name,
        {
          title: definition.title,
          description: definition.description,
          // Erased here: the SDK validated the arguments against this very schema before the callback
          // (a failure, e.g. an argument over its length bound, is an isError result before any read).
          inputSchema: definition.input as z.ZodObject,
          outputSchema,
          // Reads only, of this service's own archive; the same arguments give the same answer (a call
          // spends one request of the budget, which is metering, not an effect on the data).
          annotations: {
            title: definition.title,
            readOnlyHint: true,
            destructiveHint: false,
            idempotentHint: true,
            openWorldHint: false,
          },
          ...(definition.meta ? { _meta: definition.meta } : {}),
        },
        (args, context) => runTool(definition, session, args as z.output<Input>, context.mcpReq.signal),
      );
    },
  };
}

async function runTool<Input extends z.ZodObject, Output extends z.ZodObject>(
  tool: ToolDefinition<Input, Output>,
  session: McpSession,
  args: z.output<Input>,
  cancelled: AbortSignal,
): Promise<CallToolResult> {
  let admitted: AdmittedCall | null = null;
  try {
    const trader = (args as { trader?: unknown }).trader;
    admitted = await admitCall(session.context, session.caller, {
      address: session.address,
      trader: tool.traderScoped && typeof trader === 'string' ? trader : undefined,
      heavy: tool.heavy ?? false,
      signal: AbortSignal.any([session.signal, cancelled]),
    });
    const call = { caller: session.caller, admitted };
    const body = await admitted.storeSlot.run(() => tool.run(session.context, call, args));
    const structured = encodeResponse(tool.output, body, `tool ${tool.name}`) as Record<string, unknown>;
    return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
  } catch (failure) {
    const refusal = toApiError(failure, session.log, { tool: tool.name });
    return { isError: true, content: [{ type: 'text', text: refusal.message }], structuredContent: refusal.body() };
  } finally {
    admitted?.release();
  }
}
