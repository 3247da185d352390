/**
 * The Kubernetes manifests, offline: the base and every overlay are built with kustomize (`kubectl
 * kustomize`), and every object they produce, plus the Secret template, is validated against the
 * Kubernetes API schemas (the npm package kubernetes-models: the API's OpenAPI definitions compiled to
 * validators, no cluster and no network; it wants Node 22, so it lives in test/tools: `npm ci --prefix
 * test/tools`). Then what an operator relies on: probes on /healthz and /readyz, resources, a restricted
 * securityContext, PodDisruptionBudgets and Services that select real pods, an HPA on CPU for the API and on consumer lag (a metric the workers export) for ingest, pinned
 * images, and a ConfigMap that the program's own config parser accepts.
 *
 * Limitation: the Kubernetes schemas allow unknown fields (kubeconform's -strict is not available from
 * npm or Debian), so a misspelt optional field passes the schema; the checks below name the fields that matter.
 */
import { spawnSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ENVIRONMENT_VARIABLES, parseConfig } from '../config.ts';
import { metricsRegistry } from '../metrics/registry.ts';
import { REPO_ROOT } from './harness/child.ts';
import { importTool } from './harness/node22.ts';

const K8S = path.join(REPO_ROOT, 'deploy/k8s');

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

interface Container {
  name: string;
  image: string;
  args?: string[];
  ports?: { name: string; containerPort: number }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[] };
  };
}

interface PodSpec {
  containers: Container[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
}

function kustomize(directory: string): K8sObject[] {
  const result = spawnSync('kubectl', ['kustomize', directory], { encoding: 'utf8' });
  if (result.error)
    throw new Error(
      'kubectl is not installed: the manifests are built with `kubectl kustomize` (kubectl 1.27 or later)',
    );
  expect(result.status, result.stderr).toBe(0);
  return parseAllDocuments(result.stdout).map((document) => document.toJS() as K8sObject);
}

/** Validates one object with the kubernetes-models class of its apiVersion and kind. */
async function validate(object: K8sObject): Promise<void> {
  const module = await importTool<Record<string, new (data: unknown) => { validate(): void }>>(
    'kubernetes-models',
    object.apiVersion,
  );
  const Model = module[object.kind];
  if (!Model) throw new Error(`no schema for ${object.apiVersion} ${object.kind}`);
  try {
    new Model(object).validate();
  } catch (error) {
    throw new Error(`${object.kind}/${object.metadata.name}: ${(error as Error).message}`);
  }
}

function podSpecOf(object: K8sObject): PodSpec | null {
  if (object.kind === 'Deployment' || object.kind === 'Job')
    return (object.spec as { template: { spec: PodSpec } }).template.spec;
  return null;
}

function podLabelsOf(object: K8sObject): Record<string, string> {
  return (object.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
}

const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([key, value]) => labels[key] === value);

async function overlays(): Promise<string[]> {
  return (await readdir(path.join(K8S, 'overlays'))).map((name) => path.join(K8S, 'overlays', name));
}

describe('deploy/k8s', () => {
  it('builds the base and every overlay, and every object validates against the Kubernetes schemas', async () => {
    const builds = [path.join(K8S, 'base'), ...(await overlays())];
    expect(builds.length).toBeGreaterThanOrEqual(2);
    for (const directory of builds) {
      const objects = kustomize(directory);
      expect(objects.length, directory).toBeGreaterThan(0);
      for (const object of objects) await validate(object);
    }
    const template = parseAllDocuments(await readFile(path.join(K8S, 'base/secret.template.yaml'), 'utf8')).map(
      (document) => document.toJS() as K8sObject,
    );
    for (const object of template) await validate(object);

    // A schema violation is caught (the check can fail).
    await expect(
      validate({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'broken' },
        spec: { replicas: 'two', template: {} },
      }),
    ).rejects.toThrow(/selector|replicas/);
  });

  it('gives every workload probes, resources and a restricted securityContext, and pins its image', async () => {
    const production = kustomize(path.join(K8S, 'overlays/production'));
    const workloads = production.filter((object) => podSpecOf(object) !== null);
    const names = workloads.map((object) => `${object.kind}/${object.metadata.name}`).sort();
    expect(names).toEqual(
      [
        'Deployment/trader-analytics-api',
        'Deployment/trader-analytics-archive',
        'Deployment/trader-analytics-ingest',
        'Deployment/trader-analytics-upstream',
        'Deployment/trader-analytics-clob',
        'Deployment/trader-analytics-live',
        'Job/trader-analytics-migrate',
      ].sort(),
    );
    for (const workload of workloads) {
      const pod = podSpecOf(workload)!;
      const label = `${workload.kind}/${workload.metadata.name}`;
      expect(pod.securityContext?.runAsNonRoot, label).toBe(true);
      expect(pod.securityContext?.runAsUser, label).not.toBe(0);
      expect(pod.securityContext?.seccompProfile?.type, label).toBe('RuntimeDefault');
      for (const container of pod.containers) {
        expect(container.image, label).toMatch(/^registry\.example\.com\/trader-analytics:\d+\.\d+\.\d+$/);
        expect(container.resources?.requests?.cpu, label).toBeDefined();
        expect(container.resources?.requests?.memory, label).toBeDefined();
        expect(container.resources?.limits?.memory, label).toBeDefined();
        expect(container.securityContext?.allowPrivilegeEscalation, label).toBe(false);
        expect(container.securityContext?.readOnlyRootFilesystem, label).toBe(true);
        expect(container.securityContext?.capabilities?.drop, label).toEqual(['ALL']);
        expect(container.envFrom?.map((source) => source.configMapRef?.name ?? source.secretRef?.name)).toEqual([
          'trader-analytics',
          'trader-analytics',
        ]);
        if (workload.kind === 'Job') continue;
        // Long-running roles: liveness on /healthz, readiness on /readyz, on a port the container declares.
        expect(container.livenessProbe?.httpGet?.path, label).toBe('/healthz');
        expect(container.readinessProbe?.httpGet?.path, label).toBe('/readyz');
        const portNames = (container.ports ?? []).map((port) => port.name);
        expect(portNames, label).toContain(container.livenessProbe!.httpGet!.port);
        expect(portNames, label).toContain(container.readinessProbe!.httpGet!.port);
      }
    }
    const roles = Object.fromEntries(
      workloads.map((object) => [object.metadata.name, podSpecOf(object)!.containers[0]!.args]),
    );
    expect(roles).toEqual({
      'trader-analytics-api': ['api'],
      'trader-analytics-ingest': ['ingest'],
      'trader-analytics-archive': ['archive'],
      'trader-analytics-upstream': ['upstream'],
      'trader-analytics-clob': ['clob'],
      'trader-analytics-live': ['live'],
      'trader-analytics-migrate': ['migrate'],
    });
    // The base runs no source: the components add them.
    expect(
      kustomize(path.join(K8S, 'base')).filter((object) => /archive|upstream|clob|live/.test(object.metadata.name)),
    ).toEqual([]);
  });

  it('wires Service, Ingress, PodDisruptionBudgets and autoscalers to the workloads', () => {
    const objects = kustomize(path.join(K8S, 'overlays/production'));
    const byKind = (kind: string) => objects.filter((object) => object.kind === kind);
    const deployments = byKind('Deployment');
    const deployment = (name: string) => deployments.find((object) => object.metadata.name === name)!;

    // Each Service selects exactly its workload's pods: the API's, and the live plane's.
    const services = byKind('Service');
    const serviceNamed = (name: string) => services.find((object) => object.metadata.name === name)!;
    for (const [serviceName, workload] of [
      ['trader-analytics-api', 'trader-analytics-api'],
      ['trader-analytics-live', 'trader-analytics-live'],
    ] as const) {
      const serviceSpec = serviceNamed(serviceName).spec as {
        selector: Record<string, string>;
        ports: { targetPort: string }[];
      };
      const selected = deployments.filter((object) => selects(serviceSpec.selector, podLabelsOf(object)));
      expect(selected.map((object) => object.metadata.name)).toEqual([workload]);
      expect(serviceSpec.ports[0]!.targetPort).toBe('http');
    }
    expect(services).toHaveLength(2);

    // The public paths: the API's to the API, the live plane's path to the live pods (upgrades kept open).
    const ingresses = byKind('Ingress');
    const paths = ingresses.flatMap((ingress) =>
      (
        ingress.spec as { rules: { http: { paths: { path: string; backend: { service: { name: string } } }[] } }[] }
      ).rules.flatMap((rule) => rule.http.paths),
    );
    expect(paths.map((entry) => entry.path)).toEqual(
      expect.arrayContaining(['/api/agent/v1', '/mcp', '/api/agent/v1/live']),
    );
    expect(paths.map((entry) => entry.path)).not.toContain('/metrics');
    for (const entry of paths)
      expect(entry.backend.service.name).toBe(
        entry.path === '/api/agent/v1/live' ? 'trader-analytics-live' : 'trader-analytics-api',
      );
    const liveIngress = ingresses.find((ingress) => ingress.metadata.name === 'trader-analytics-live')!;
    expect(
      Number(
        (liveIngress.metadata as unknown as { annotations: Record<string, string> }).annotations[
          'nginx.ingress.kubernetes.io/proxy-read-timeout'
        ],
      ),
    ).toBeGreaterThanOrEqual(3600);
    expect(deployment('trader-analytics-live')).toBeDefined();

    // Every long-running workload has a PDB that selects exactly its pods.
    const budgets = byKind('PodDisruptionBudget');
    for (const workload of deployments) {
      const matching = budgets.filter((budget) =>
        selects(
          (budget.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels,
          podLabelsOf(workload),
        ),
      );
      expect(matching.length, workload.metadata.name).toBe(1);
    }

    const autoscalers = byKind('HorizontalPodAutoscaler');
    const target = (name: string) =>
      autoscalers.find((hpa) => (hpa.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name === name)!;
    for (const name of ['trader-analytics-api', 'trader-analytics-live']) {
      const cpuMetrics = (target(name).spec as { metrics: { type: string; resource?: { name: string } }[] }).metrics;
      expect(cpuMetrics, name).toEqual([
        expect.objectContaining({ type: 'Resource', resource: expect.objectContaining({ name: 'cpu' }) }),
      ]);
    }
    const ingestMetrics = (
      target('trader-analytics-ingest').spec as { metrics: { type: string; external?: { metric: { name: string } } }[] }
    ).metrics;
    expect(ingestMetrics[0]!.type).toBe('External');
    const lagMetric = ingestMetrics[0]!.external!.metric.name;
    // The metric the HPA scales on is one the workers export.
    expect(metricsRegistry.getSingleMetric(lagMetric)).toBeDefined();
    expect(deployment('trader-analytics-ingest')).toBeDefined();
  });

  it('ships a ConfigMap and Secret template that the program accepts as its configuration', async () => {
    for (const directory of [path.join(K8S, 'base'), ...(await overlays())]) {
      const objects = kustomize(directory);
      const configMap = objects.find((object) => object.kind === 'ConfigMap')!;
      const template = parseAllDocuments(
        await readFile(path.join(K8S, 'base/secret.template.yaml'), 'utf8'),
      )[0]!.toJS() as K8sObject;
      const environment = { ...configMap.data, ...template.stringData };
      // Every key is one the program reads (a misspelt key would be silently ignored by it).
      const config = parseConfig(environment);
      expect(config.clickhouse.url, directory).toMatch(/^https?:\/\//);
      expect(config.kafka.brokers?.length, directory).toBeGreaterThan(0);
      expect(config.redis.url, directory).toMatch(/^redis:\/\//);
      expect(config.metrics.port, directory).toBe(9464);
      const known = new Set(ENVIRONMENT_VARIABLES);
      for (const key of Object.keys(environment)) expect(known.has(key), `${directory}: ${key}`).toBe(true);
      // The Deployments' probe ports are the configured ones.
      const api = objects.find(
        (object) => object.kind === 'Deployment' && object.metadata.name === 'trader-analytics-api',
      )!;
      expect(podSpecOf(api)!.containers[0]!.ports![0]!.containerPort).toBe(config.http.port);
    }
  });
});
