import { mkdtemp, open, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { readStateFile, StateFileError, writeFileAtomic } from './state-file.ts';

const schema = z.object({ seed: z.number().int(), resumeFromTs: z.number().int() });

describe('state files', () => {
  it('replaces a file without ever writing into it: a reader of the old file still sees it whole', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'ta-statefile-'));
    const file = path.join(directory, 'simulator-state.json');
    const before = JSON.stringify({ seed: 1, resumeFromTs: 100 });
    await writeFile(file, before);
    // An in-place write (truncate, then write) would show through this handle; a rename never does.
    const oldHandle = await open(file, 'r');
    try {
      await writeFileAtomic(file, JSON.stringify({ seed: 1, resumeFromTs: 200 }));
      expect(await oldHandle.readFile('utf8')).toBe(before);
    } finally {
      await oldHandle.close();
    }
    expect(await readStateFile(file, schema)).toEqual({ seed: 1, resumeFromTs: 200 });
    expect(await readdir(directory)).toEqual(['simulator-state.json']);
  });

  it('reads a missing file as absent, and an unusable one as an error naming the file and the reason', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'ta-statefile-'));
    const file = path.join(directory, 'state.json');
    expect(await readStateFile(file, schema)).toBeUndefined();
    for (const [content, reason] of [
      ['', 'is empty'],
      ['  \n', 'is empty'],
      ['{"seed": 1, "resu', 'is not valid JSON'],
      ['{"seed": 1}', 'resumeFromTs'],
      ['[1, 2]', 'does not hold what it should'],
    ] as const) {
      await writeFile(file, content);
      const error = await readStateFile(file, schema).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error, content).toBeInstanceOf(StateFileError);
      expect((error as Error).message).toContain(file);
      expect((error as Error).message).toContain(reason);
      expect(await readFile(file, 'utf8')).toBe(content);
    }
  });
});
