/**
 * `main.ts` as a test starts it with config overrides (startRole's `overrides`): argv[2] is their JSON,
 * applied to the config before main.ts loads it. Production settings that are constants (batch sizes,
 * group timers) are changed this way, never through the environment.
 */
import { loadConfig, type ConfigOverrides } from '../../config.ts';

const [overrides = '{}'] = process.argv.splice(2, 1);
try {
  loadConfig(JSON.parse(overrides) as ConfigOverrides);
} catch {
  // An invalid environment: main.ts reports it as it would without overrides.
}
await import('../../main.ts');
