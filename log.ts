/**
 * The root pino logger. Modules take a named child (`rootLogger.child({ name: 'ingest' })`) and log
 * object-first: `log.warn({ topic, partition, offset }, 'dead-lettered')`. Secrets are redacted by path.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: {
        paths: [
          'key',
          'apiKey',
          'api_key',
          'authorization',
          'headers.authorization',
          '*.password',
          'password',
          'secret',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
