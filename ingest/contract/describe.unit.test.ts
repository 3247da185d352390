import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TOPICS, TOPIC_IDS } from './topics.ts';
import { describeTopics } from './describe.ts';

const EVENTS_DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/events.md');

describe('the topic table of docs/events.md', () => {
  it('is the one generated from the schemas (run `npm run docs` after changing a schema)', () => {
    const doc = readFileSync(EVENTS_DOC, 'utf8');
    const section = /<!-- topics:begin -->\n([\s\S]*?)\n<!-- topics:end -->/.exec(doc);
    expect(section?.[1]).toBe(describeTopics());
  });

  it('names every topic and every field', () => {
    const table = describeTopics();
    for (const topicId of TOPIC_IDS) {
      expect(table).toContain(`\`${TOPICS[topicId].name}\``);
    }
    for (const field of [
      'tx_hash',
      'log_index',
      'winner_token_side',
      'title_start_ts',
      'outcome1',
      'outcome2',
      'pnl_unrealized',
      'key_sha256',
      'last4',
      'watching',
    ]) {
      expect(table).toContain(`\`${field}\``);
    }
  });
});
