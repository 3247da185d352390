/**
 * A Kafka-protocol cluster for tests, without a container engine: librdkafka's mock brokers, started
 * through kcat (Debian package `kcat`). kcat keeps the cluster alive while its stdin stays open; its
 * `-d mock` log names the bootstrap servers.
 *
 * Limits of the mock (tests respect them): topics are auto-created on first use with 4 partitions
 * (admin topic creation fails), and each partition keeps only about 5 MB (older data is dropped
 * silently), so tests keep backlogs small.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

export interface MockKafka {
  brokers: string[];
  stop(): Promise<void>;
}

const BOOTSTRAP = /bootstrap\.servers=([0-9.:,]+)/;

export async function startMockKafka(brokerCount = 3): Promise<MockKafka> {
  const probe = spawnSync('kcat', ['-V'], { encoding: 'utf8' });
  if (probe.error) {
    throw new Error(
      'kcat is not installed: the tests need librdkafka mock brokers. Install it with `apt-get install -y kcat` (or set KAFKA_BROKERS to a real cluster).',
    );
  }
  const child: ChildProcess = spawn(
    'kcat',
    ['-X', `test.mock.num.brokers=${brokerCount}`, '-b', 'localhost:1', '-P', '-t', '_', '-d', 'mock'],
    {
      stdio: ['pipe', 'ignore', 'pipe'],
    },
  );
  const brokers = await new Promise<string[]>((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      const match = BOOTSTRAP.exec(seen);
      if (match) {
        child.stderr!.off('data', onData);
        // Keep draining the debug log, or kcat blocks on a full pipe.
        child.stderr!.on('data', () => {});
        resolve(match[1]!.split(','));
      } else if (seen.length > 1_000_000) {
        seen = seen.slice(-10_000);
      }
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`kcat exited (${code}) before naming its bootstrap servers`)));
    child.once('error', reject);
  });
  return {
    brokers,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin!.end();
      child.kill('SIGTERM');
      await exited;
    },
  };
}
