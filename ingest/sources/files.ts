/**
 * What the file-reading commands (`import`, `replay`) share: telling a file that cannot be read whole
 * (a truncated or corrupt .gz, an I/O error, bytes that are not UTF-8 text) from a file that reads to
 * its end. Such a file publishes nothing of itself, is named with its reason, and makes the command
 * exit non-zero; the commands decide it the same way with these helpers.
 */
import { Transform } from 'node:stream';

/** A file the command could not read whole, and why. */
export interface FileFailure {
  file: string;
  reason: string;
}

/** Raised by `textGuard`: the bytes are not text. */
class NotTextError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'NotTextError';
  }
}

/**
 * Why reading a file failed, when the failure is the file's (its compression, its bytes, the file
 * system) rather than a bug; undefined for anything else, which the caller rethrows.
 */
export function unreadableReason(error: unknown): string | undefined {
  if (error instanceof NotTextError) return error.message;
  if (!(error instanceof Error) || !('code' in error) || typeof error.code !== 'string') return undefined;
  // zlib: Z_BUF_ERROR (truncated or empty), Z_DATA_ERROR (not gzip, or corrupt), …
  if (error.code.startsWith('Z_'))
    return `cannot decompress it (${error.message}): the .gz is truncated, empty or not gzip`;
  // The file system: EACCES, EISDIR, EIO, …
  if ('syscall' in error) return `cannot read it (${error.message})`;
  return undefined;
}

/**
 * Passes text through and fails on bytes that are not UTF-8 text (a NUL byte, an invalid or cut-off
 * sequence): binary junk under a text name is an unreadable file, not an export with zero rows.
 */
export function textGuard(): Transform {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let offset = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const nul = chunk.indexOf(0);
      if (nul !== -1)
        return done(new NotTextError(`binary content (a NUL byte at byte ${offset + nul}): not a text file`));
      try {
        decoder.decode(chunk, { stream: true });
      } catch {
        return done(new NotTextError(`not UTF-8 text (an invalid byte sequence near byte ${offset})`));
      }
      offset += chunk.length;
      done(null, chunk);
    },
    flush(done) {
      try {
        decoder.decode();
      } catch {
        return done(new NotTextError('the file ends inside a UTF-8 character (truncated?)'));
      }
      done();
    },
  });
}
