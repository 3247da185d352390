/**
 * deploy/compose.yaml is accepted by Docker Compose (`docker compose config`, or the standalone
 * `docker-compose` from Debian where the v2 plugin is absent: both validate without an engine), and the
 * stack it describes is the one docs/operating.md promises: every long-running service with a healthcheck, two
 * ingest workers and two API instances behind the proxy, the sources off unless their profile is named,
 * no `latest` tags, required secrets refused when missing.
 */
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { REPO_ROOT } from './harness/child.ts';

const COMPOSE_FILE = path.join(REPO_ROOT, 'deploy/compose.yaml');
const SECRETS = {
  CLICKHOUSE_PASSWORD: 'compose-test-password',
  API_CURSOR_SECRET: 'compose-test-cursor-secret',
  DOWNLOAD_SECRET: 'compose-test-download-secret',
  GRAFANA_ADMIN_PASSWORD: 'compose-test-grafana',
};

/** The Compose CLI on this machine: the docker plugin, else Debian's docker-compose. */
function composeCommand(): string[] {
  if (spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' }).status === 0) return ['docker', 'compose'];
  if (spawnSync('docker-compose', ['version'], { encoding: 'utf8' }).status === 0) return ['docker-compose'];
  throw new Error(
    'no Docker Compose CLI: install the docker compose plugin, or `apt-get install -y docker-compose` (.ci/run does)',
  );
}

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  profiles?: string[];
  healthcheck?: { test?: string[]; disable?: boolean };
  deploy?: { replicas?: number };
  depends_on?: Record<string, { condition: string }>;
  environment?: Record<string, string>;
  ports?: (string | { published: string | number; target: number })[];
}

function config(extraArgs: string[], environment: Record<string, string>) {
  const [binary, ...args] = composeCommand();
  return spawnSync(binary!, [...args, '-f', COMPOSE_FILE, ...extraArgs, 'config'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...environment },
  });
}

describe('deploy/compose.yaml', () => {
  it('is accepted by Docker Compose and describes the stack with healthchecks, replicas and profiles', async () => {
    const result = config(
      ['--profile', 'demo', '--profile', 'archive', '--profile', 'upstream', '--profile', 'clob'],
      SECRETS,
    );
    expect(result.status, result.stderr).toBe(0);
    const resolved = parse(result.stdout) as { services: Record<string, Service> };
    const services = resolved.services;
    expect(Object.keys(services).sort()).toEqual(
      [
        'api',
        'archive',
        'clickhouse',
        'grafana',
        'ingest',
        'kafka',
        'migrate',
        'prometheus',
        'proxy',
        'redis',
        'simulate',
        'upstream',
        'clob',
        'live',
      ].sort(),
    );

    // Every long-running service has a healthcheck; the one-shot migrate is waited on by its exit.
    for (const [name, service] of Object.entries(services)) {
      if (name === 'migrate') continue;
      expect(service.healthcheck?.test?.length ?? 0, `${name} healthcheck`).toBeGreaterThan(0);
      expect(service.healthcheck?.disable ?? false, name).toBe(false);
    }
    expect(services.migrate!.command).toEqual(['migrate']);
    for (const name of ['ingest', 'api', 'live', 'archive', 'upstream', 'clob']) {
      expect(services[name]!.depends_on?.migrate?.condition, name).toBe('service_completed_successfully');
    }

    // Two workers in one group, two API instances behind the proxy, which alone is published.
    expect(services.ingest!.command).toEqual(['ingest']);
    expect(services.ingest!.deploy?.replicas).toBe(2);
    expect(services.api!.command).toEqual(['api']);
    expect(services.api!.deploy?.replicas).toBe(2);
    expect(services.api!.ports ?? []).toEqual([]);
    expect(services.proxy!.depends_on?.api?.condition).toBe('service_healthy');
    expect((services.proxy!.ports ?? []).length).toBe(1);
    const proxyConfig = await readFile(path.join(REPO_ROOT, 'deploy/proxy/nginx.conf'), 'utf8');
    expect(proxyConfig).toMatch(/proxy_pass \$api;/);
    expect(proxyConfig).toMatch(/set \$api http:\/\/api:8080;/);
    // The live plane: its own role and instances, behind the same proxy, its WebSocket upgraded.
    expect(services.live!.command).toEqual(['live']);
    expect(services.live!.depends_on?.kafka?.condition).toBe('service_healthy');
    expect(services.live!.ports ?? []).toEqual([]);
    expect(proxyConfig).toMatch(/location \/api\/agent\/v1\/live \{\s+proxy_pass \$live;/);
    expect(proxyConfig).toMatch(/proxy_set_header Upgrade \$http_upgrade;/);

    // KRaft: no ZooKeeper anywhere.
    expect(services.kafka!.environment?.KAFKA_PROCESS_ROLES).toBe('broker,controller');
    expect(JSON.stringify(services).toLowerCase()).not.toContain('zookeeper');

    // Secrets reach the roles from the environment; the API instances share theirs.
    for (const name of ['api', 'ingest', 'migrate'])
      expect(services[name]!.environment?.CLICKHOUSE_PASSWORD, name).toBe(SECRETS.CLICKHOUSE_PASSWORD);
    expect(services.api!.environment?.API_CURSOR_SECRET).toBe(SECRETS.API_CURSOR_SECRET);
    expect(services.api!.environment?.DOWNLOAD_SECRET).toBe(SECRETS.DOWNLOAD_SECRET);

    // Every image is pinned.
    for (const [name, service] of Object.entries(services)) {
      expect(service.image, name).toBeDefined();
      expect(service.image!, name).toMatch(/:[\w.-]+$/);
      expect(service.image!, name).not.toMatch(/:latest$/);
    }
  });

  it('keeps the sources off unless their profile is named', async () => {
    const source = parse(await readFile(COMPOSE_FILE, 'utf8')) as { services: Record<string, Service> };
    const profiled = Object.entries(source.services)
      .filter(([, service]) => (service.profiles ?? []).length > 0)
      .map(([name, service]) => [name, service.profiles]);
    expect(Object.fromEntries(profiled)).toEqual({
      simulate: ['demo'],
      archive: ['archive'],
      upstream: ['upstream'],
      clob: ['clob'],
    });
    const archive = source.services.archive!;
    expect(archive.command).toEqual(['archive']);
    expect(source.services.upstream!.command).toEqual(['upstream']);
    expect(source.services.clob!.command).toEqual(['clob']);
  });

  it('refuses to render without the secrets (no empty ClickHouse password)', () => {
    const { CLICKHOUSE_PASSWORD: _omitted, ...withoutPassword } = SECRETS;
    const result = config([], withoutPassword);
    expect(result.status).not.toBe(0);
    expect(result.stdout + result.stderr).toContain('set CLICKHOUSE_PASSWORD');
  });
});
