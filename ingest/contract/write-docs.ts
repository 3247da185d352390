/** `npm run docs` (with config-docs.ts): rewrites the topic table of docs/events.md from the schemas. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeTopics } from './describe.ts';

const eventsPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/events.md');
const SECTION = /<!-- topics:begin -->\n[\s\S]*?\n<!-- topics:end -->/;
const section = `<!-- topics:begin -->\n${describeTopics()}\n<!-- topics:end -->`;
const page = existsSync(eventsPath)
  ? readFileSync(eventsPath, 'utf8')
  : `# Events\n\nOne topic per event kind, one zod schema each (ingest/contract/).\n\n${section}\n`;
if (!SECTION.test(page)) throw new Error('docs/events.md has no <!-- topics:begin --> … <!-- topics:end --> section');
writeFileSync(eventsPath, page.replace(SECTION, section));
