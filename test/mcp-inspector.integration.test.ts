/**
 * Acceptance with a real third-party MCP client: the MCP Inspector's CLI (npm @modelcontextprotocol/inspector,
 * run headless, `--cli <url> --header "Authorization: Bearer …"`) against the service listening on a real
 * port. It lists the same tools as the SDK's own Client and calls `whoami` with a Pro key; a wrong key makes
 * it fail.
 *
 * The Inspector needs Node 22 (its engines say >=22.19): it and npm's `node` package, whose binary it runs
 * on, live in the test tools package (test/tools, `npm ci --prefix test/tools`; test/harness/node22.ts).
 * The service and this test stay on the machine's Node.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanId } from '../config.ts';
import { inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import { binOf, killAll, node22, run, type Run } from './harness/node22.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- the Inspector's JSON output

const DAY = 86_400;
const NOW = Math.floor(Date.now() / 1000);
const config = inProcessConfig('mcp-inspector');

const NODE_22 = node22();
const INSPECTOR = binOf('@modelcontextprotocol/inspector', 'mcp-inspector');

let home: string;

/** The Inspector's CLI against /mcp with an Authorization header, JSON output; its own home (catalog, secrets) in a temp dir. */
function inspector(url: URL, authorization: string, methodArgs: string[]): Promise<Run> {
  const args = [
    INSPECTOR,
    '--cli',
    url.href,
    '--transport',
    'http',
    '--header',
    `Authorization: ${authorization}`,
    '--stored-auth-only',
    '--format',
    'json',
    ...methodArgs,
  ];
  return run(NODE_22, args, { PATH: process.env.PATH ?? '', HOME: home, NO_COLOR: '1' });
}

/** The result of a successful `--format json` run: it prints one JSON object, `{ "result": … }`, on stdout. */
function resultOf(result: Run): Json {
  expect(
    result.exit,
    `the Inspector failed (${result.exit}): ${result.stderr.slice(-2000)}${result.stdout.slice(-2000)}`,
  ).toBe(0);
  const output = JSON.parse(result.stdout) as Json;
  expect(output).toHaveProperty('result');
  return output.result as Json;
}

let keys: Record<PlanId, string>;
let api: TestApi;
let mcpUrl: URL;
let sdk: Client | undefined;

beforeAll(async () => {
  home = mkdtempSync(path.join(os.tmpdir(), 'mcp-inspector-home-'));
  keys = await publishPlanKeys(config, NOW - DAY);
  api = await startTestApi(config, { now: () => NOW, keys });
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = api.app.server.address() as AddressInfo;
  mcpUrl = new URL(`http://127.0.0.1:${port}${config.mcp.path}`);
});

afterAll(async () => {
  killAll();
  await sdk?.close().catch(() => undefined);
  if (api) {
    await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api.close();
  }
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('the MCP Inspector (CLI mode, Node 22) as a third-party client', () => {
  it('runs on the Node 22 of test/tools’ `node` package, while the service and the tests stay on the machine’s Node', async () => {
    const version = await run(NODE_22, ['--version'], { PATH: process.env.PATH ?? '' }, 30_000);
    expect(
      version.exit,
      `${NODE_22}: ${version.stderr} (is test/tools' \`node\` package installed with its preinstall? run npm ci --prefix test/tools; see test/tools/package.json allowScripts)`,
    ).toBe(0);
    expect(version.stdout.trim()).toMatch(/^v22\./);
    expect(realpathSync(process.execPath)).not.toBe(realpathSync(NODE_22));
  });

  it('lists exactly the tools the service lists to the SDK Client', async () => {
    sdk = new Client({ name: 'mcp-inspector-test', version: '1.0.0' });
    await sdk.connect(
      new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${keys.pro}` } } }),
    );
    const expected = (await sdk.listTools()).tools.map((tool) => tool.name).sort();
    expect(expected).toContain('whoami');

    const listed = resultOf(await inspector(mcpUrl, `Bearer ${keys.pro}`, ['--method', 'tools/list']));
    const tools = listed.tools as Json[];
    expect(tools.map((tool) => tool.name as string).sort()).toEqual(expected);
    for (const tool of tools) expect(tool.inputSchema, tool.name).toMatchObject({ type: 'object' });
  });

  it('calls whoami: the Pro plan and the calling key’s last four characters', async () => {
    const result = resultOf(
      await inspector(mcpUrl, `Bearer ${keys.pro}`, ['--method', 'tools/call', '--tool-name', 'whoami']),
    );
    expect(result.isError ?? false).toBe(false);
    const text = (result.content as Json[]).find((block) => block.type === 'text');
    const me = (result.structuredContent ?? JSON.parse(text!.text as string)) as Json;
    expect(me.plan).toBe('Pro Intelligence');
    expect(me.key.last4).toBe(keys.pro.slice(-4));
    if (result.structuredContent && text) expect(JSON.parse(text.text as string)).toEqual(result.structuredContent);
  });

  it('fails on a wrong key: exit 3 and an auth_required error envelope on stderr (no interactive OAuth: --stored-auth-only)', async () => {
    const result = await inspector(mcpUrl, 'Bearer not-a-key-of-this-service', ['--method', 'tools/list']);
    expect(result.exit, result.stdout + result.stderr).toBe(3); // the Inspector's exit code for auth_required
    expect(result.stdout).toBe('');
    const envelope = JSON.parse(result.stderr.trim().split('\n').at(-1)!) as Json;
    expect(envelope.error.code).toBe('auth_required');
  });
});
