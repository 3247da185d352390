/** `npm run docs`: rewrites the topic table of README.md from the schemas. */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeTopics } from './describe.ts';

const readmePath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../README.md');
const readme = readFileSync(readmePath, 'utf8');
const updated = readme.replace(/<!-- topics:begin -->\n[\s\S]*?\n<!-- topics:end -->/, `<!-- topics:begin -->\n${describeTopics()}\n<!-- topics:end -->`);
if (updated === readme && !readme.includes('<!-- topics:begin -->')) throw new Error('README.md has no <!-- topics:begin --> section');
writeFileSync(readmePath, updated);
