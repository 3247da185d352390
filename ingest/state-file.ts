/**
 * The embedded mode's small state files under DATA_DIR (demo keys, the simulator's position): written
 * atomically, read strictly. A kill at any moment leaves either the old file or the new one, never a
 * torn one; and a file that is there but unreadable stops the program with a message instead of being
 * taken for a first start (which would silently begin a new world on top of the old one).
 */
import { open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { z } from 'zod';
import { describeZodError } from './decode.ts';

/** A state file exists but cannot be used: the program stops and says which file and why. */
export class StateFileError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(
      `${file}: ${reason}. It is state of the embedded mode (see docs/embedded-mode.md, "Crash safety"); ` +
        'restore it, or delete the data directory to start over with a new world.',
    );
    this.name = 'StateFileError';
  }
}

/** Writes `text` to `file` through a temporary file: write, fsync, rename, fsync the directory. */
export async function writeFileAtomic(file: string, text: string, mode = 0o644): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  const handle = await open(temporary, 'w', mode);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  // The rename itself is durable only once the directory entry is.
  const directory = await open(path.dirname(file), 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

/** Reads and validates a JSON state file: undefined when it does not exist, StateFileError when it is unusable. */
export async function readStateFile<S extends z.ZodType>(file: string, schema: S): Promise<z.output<S> | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StateFileError(file, `cannot be read (${(error as Error).message})`);
  }
  if (text.trim() === '') throw new StateFileError(file, 'is empty');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StateFileError(file, `is not valid JSON (${(error as Error).message})`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw new StateFileError(file, `does not hold what it should (${describeZodError(parsed.error)})`);
  return parsed.data as z.output<S>;
}
