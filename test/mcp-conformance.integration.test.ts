/**
 * Acceptance: the official MCP conformance suite (npm @modelcontextprotocol/conformance, its CLI
 * `conformance server --url …`, on the Node 22 of test/tools' `node` package; both installed by
 * `npm ci --prefix test/tools`) against /mcp of the service
 * listening on a real port, with a key. Every active server scenario runs; the ones /mcp is expected to
 * fail are listed with their reasons in test/conformance-expected-failures.yaml. The test fails when an
 * unlisted scenario fails, when a listed one passes (the list must then shrink), or when a scenario the
 * service must pass (initialize, ping, tools/list, prompts/list, resources/list, DNS-rebinding protection) is listed.
 *
 * The suite has no option for a request header: it reaches /mcp through a local forwarding proxy (this
 * file) that adds `Authorization: Bearer <key>` to every request and keeps every other header as the
 * suite sent it, Host included, so the DNS-rebinding scenario's foreign Host still reaches the service's
 * Host check. Everything runs on this machine (loopback only); the suite needs no network.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { PlanId } from '../config.ts';
import { inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import { REPO_ROOT } from './harness/child.ts';
import { binOf, killAll, node22, run, type Run } from './harness/node22.ts';

const DAY = 86_400;
const NOW = Math.floor(Date.now() / 1000);
const config = inProcessConfig('mcp-conformance');
const NODE_22 = node22();
const SUITE = binOf('@modelcontextprotocol/conformance', 'conformance');
const EXPECTED_FAILURES_FILE = path.join(REPO_ROOT, 'test', 'conformance-expected-failures.yaml');
/** The generic scenarios any MCP server must pass, whatever its tools: never an expected failure here. */
const MUST_PASS = [
  'server-initialize',
  'ping',
  'tools-list',
  'prompts-list',
  'resources-list',
  'dns-rebinding-protection',
];

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

let keys: Record<PlanId, string>;
let api: TestApi;
let proxy: http.Server;
let proxyUrl: URL;
let workDirectory: string;
let forwarded = 0;

/** Forwards every request to the service, adding the key; the answer goes back as it came. */
function keyAddingProxy(target: URL, authorization: string): http.Server {
  return http.createServer((incoming, outgoing) => {
    forwarded += 1;
    const upstream = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, authorization },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    upstream.on('error', () => outgoing.destroy());
    incoming.pipe(upstream);
  });
}

beforeAll(async () => {
  workDirectory = mkdtempSync(path.join(os.tmpdir(), 'mcp-conformance-'));
  keys = await publishPlanKeys(config, NOW - DAY);
  api = await startTestApi(config, { now: () => NOW, keys });
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  const target = new URL(`http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`);
  proxy = keyAddingProxy(target, `Bearer ${keys.max}`);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = new URL(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}${config.mcp.path}`);
});

afterAll(async () => {
  killAll();
  if (proxy) await new Promise((resolve) => proxy.close(resolve));
  if (api) {
    await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api.close();
  }
  if (workDirectory) rmSync(workDirectory, { recursive: true, force: true });
});

/** The expected failures, scenario → reason. */
function expectedFailures(): Map<string, string> {
  const document = parseYaml(readFileSync(EXPECTED_FAILURES_FILE, 'utf8')) as { server?: Record<string, unknown> };
  return new Map(Object.entries(document.server ?? {}).map(([scenario, reason]) => [scenario, String(reason ?? '')]));
}

/** Each scenario's checks, from the suite's result directories (`server-<scenario>-<timestamp>/checks.json`). */
function resultsIn(directory: string): Map<string, Check[]> {
  const results = new Map<string, Check[]>();
  for (const entry of readdirSync(directory)) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
    if (!scenario) continue;
    results.set(scenario, JSON.parse(readFileSync(path.join(directory, entry, 'checks.json'), 'utf8')) as Check[]);
  }
  return results;
}

/** The suite's own verdict rule for a baseline: a scenario fails on any FAILURE or WARNING check. */
const failed = (checks: Check[]) => checks.some((check) => check.status === 'FAILURE' || check.status === 'WARNING');

describe('the official MCP conformance suite against /mcp', () => {
  it('lists every expected failure with a reason, and none of the generic scenarios', () => {
    const expected = expectedFailures();
    expect(expected.size).toBeGreaterThan(0);
    for (const [scenario, reason] of expected) expect(reason.length, `${scenario} needs a reason`).toBeGreaterThan(10);
    for (const scenario of MUST_PASS)
      expect(expected.has(scenario), `${scenario} must pass, not be expected to fail`).toBe(false);
  });

  it('passes every active server scenario except the listed ones, each of which still fails', async () => {
    const expected = expectedFailures();
    // The suite's own baseline format: a list of scenario names.
    const baseline = path.join(workDirectory, 'baseline.yaml');
    writeFileSync(baseline, `server:\n${[...expected.keys()].map((scenario) => `  - ${scenario}\n`).join('')}`);
    const output = path.join(workDirectory, 'results');
    const result: Run = await run(
      NODE_22,
      [SUITE, 'server', '--url', proxyUrl.href, '--expected-failures', baseline, '--output-dir', output],
      { PATH: process.env.PATH ?? '', HOME: workDirectory, NO_COLOR: '1' },
      240_000,
      workDirectory,
    );
    const log = `${result.stdout.slice(-6000)}\n${result.stderr.slice(-2000)}`;
    const results = resultsIn(output);
    expect(results.size, log).toBeGreaterThanOrEqual(MUST_PASS.length + expected.size);
    expect(forwarded).toBeGreaterThan(results.size);

    const unexpected = [...results].filter(([scenario, checks]) => failed(checks) && !expected.has(scenario));
    const stale = [...results]
      .filter(([scenario, checks]) => !failed(checks) && expected.has(scenario))
      .map(([scenario]) => scenario);
    const describeFailure = ([scenario, checks]: [string, Check[]]) =>
      `${scenario}: ${checks
        .filter((check) => check.status === 'FAILURE' || check.status === 'WARNING')
        .map((check) => `${check.id} ${check.status} ${check.errorMessage ?? ''}`)
        .join('; ')}`;
    expect(unexpected.map(describeFailure), 'scenarios that fail but are not listed').toEqual([]);
    expect(stale, 'listed scenarios that now pass: remove them from test/conformance-expected-failures.yaml').toEqual(
      [],
    );
    for (const scenario of MUST_PASS) expect(results.has(scenario), `${scenario} ran`).toBe(true);
    for (const scenario of expected.keys())
      expect(
        results.has(scenario),
        `${scenario} (listed) ran: a scenario the suite no longer has must leave the list`,
      ).toBe(true);
    // The suite agrees (its own baseline comparison): exit 0.
    expect(result.exit, log).toBe(0);

    // DNS-rebinding protection passed both ways: a foreign Host refused with a 4xx, localhost served.
    const rebinding = results.get('dns-rebinding-protection')!;
    expect(rebinding.find((check) => check.id === 'localhost-host-rebinding-rejected')?.status).toBe('SUCCESS');
    expect(rebinding.find((check) => check.id === 'localhost-host-valid-accepted')?.status).toBe('SUCCESS');
  });
});
