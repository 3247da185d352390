/**
 * Download objects of tapes: a `.jsonl.gz` of a tape's events (one StreamEvent JSON per line, in replay
 * order), written once on the first request and reused afterwards, behind a link valid for
 * `expiresInSeconds`. Where an S3-compatible store is configured the object lives there and the link is
 * an S3 presigned URL (`downloads-s3.ts`); otherwise it lives under `DATA_DIR/downloads` and the link is
 * an HMAC-signed URL that this service serves itself under `/downloads/` (no key, no call of the budget;
 * an expired or altered link is 403).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { createWriteStream } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { TapeDownloads, TapeObject } from '../operations/tapes.ts';

/** The object's bytes: its lines, newline-terminated, gzipped. */
export function gzippedLines(lines: AsyncIterable<string>): Readable {
  async function* text() {
    for await (const line of lines) yield `${line}\n`;
  }
  return Readable.from(text()).pipe(createGzip());
}

/** A stable, non-reversible folder name per account (the account id never appears in a link). */
export function ownerFolder(accountId: string): string {
  return createHash('sha256').update(`tape-owner:${accountId}`).digest('hex').slice(0, 32);
}

const OWNER = /^[0-9a-f]{32}$/;
const FILE = /^([A-Za-z0-9_-]{1,64})\.jsonl\.gz$/;

/** Local objects under `directory`, signed links served by this service under `/downloads/`. */
export class LocalTapeDownloads implements TapeDownloads {
  readonly kind = 'local';
  readonly #secret: Buffer;
  readonly #pending = new Map<string, Promise<void>>();

  constructor(
    private readonly config: Config['tapes']['download'],
    secret = config.secret ?? randomBytes(32).toString('base64url'),
  ) {
    this.#secret = Buffer.from(secret, 'utf8');
  }

  #sign(owner: string, file: string, expires: number): Buffer {
    return createHmac('sha256', this.#secret).update(`${owner}/${file}|${expires}`).digest();
  }

  #file(owner: string, file: string): string {
    return path.join(this.config.directory, owner, file);
  }

  async link(object: TapeObject, nowSeconds: number): Promise<string> {
    const owner = ownerFolder(object.accountId);
    const file = `${object.tapeId}.jsonl.gz`;
    await this.#ensure(this.#file(owner, file), object);
    const expires = nowSeconds + this.config.expiresInSeconds;
    const sig = this.#sign(owner, file, expires).toString('base64url');
    return `${this.config.publicUrl}/downloads/${owner}/${file}?expires=${expires}&sig=${sig}`;
  }

  /** Written once: an existing object is reused; concurrent first requests share one write. */
  async #ensure(target: string, object: TapeObject): Promise<void> {
    if (await exists(target)) return;
    let pending = this.#pending.get(target);
    if (!pending) {
      pending = (async () => {
        await mkdir(path.dirname(target), { recursive: true });
        const temporary = `${target}.${randomBytes(6).toString('hex')}.tmp`;
        try {
          await pipeline(gzippedLines(object.lines()), createWriteStream(temporary));
          await rename(temporary, target);
        } catch (failure) {
          await unlink(temporary).catch(() => undefined);
          throw failure;
        }
      })().finally(() => this.#pending.delete(target));
      this.#pending.set(target, pending);
    }
    await pending;
  }

  /** The object a link names, when the link is genuine and unexpired; else why not. */
  verify(
    owner: string,
    file: string,
    expires: unknown,
    sig: unknown,
    nowSeconds: number,
  ): { path: string } | { refused: 'forbidden' | 'expired' } {
    if (
      !OWNER.test(owner) ||
      !FILE.test(file) ||
      typeof expires !== 'string' ||
      !/^\d{1,12}$/.test(expires) ||
      typeof sig !== 'string'
    )
      return { refused: 'forbidden' };
    const given = Buffer.from(sig, 'base64url');
    const expected = this.#sign(owner, file, Number(expires));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { refused: 'forbidden' };
    if (nowSeconds > Number(expires)) return { refused: 'expired' };
    return { path: this.#file(owner, file) };
  }

  /** `GET /downloads/:owner/:file`: no key, no budget; expired or altered → 403. */
  register(app: FastifyInstance, now: () => number): void {
    app.get<{ Params: { owner: string; file: string }; Querystring: Record<string, unknown> }>(
      '/downloads/:owner/:file',
      { schema: { hide: true } },
      async (request, reply) => {
        const verdict = this.verify(
          request.params.owner,
          request.params.file,
          request.query.expires,
          request.query.sig,
          now(),
        );
        if ('refused' in verdict) {
          return reply.code(403).send({
            error: verdict.refused === 'expired' ? 'link_expired' : 'link_forbidden',
            message:
              verdict.refused === 'expired'
                ? 'This download link has expired. Ask GET /tapes/{tape_id}/download for a fresh one.'
                : 'This download link is not valid (altered or incomplete). Ask GET /tapes/{tape_id}/download for a fresh one.',
          });
        }
        if (!(await exists(verdict.path)))
          return reply
            .code(404)
            .send({ error: 'not_found', message: 'The object of this link no longer exists. Ask for a fresh link.' });
        return reply
          .header('Content-Type', 'application/gzip')
          .header('Content-Disposition', `attachment; filename="${request.params.file}"`)
          .header('Cache-Control', 'private, no-store')
          .send(createReadStream(verdict.path));
      },
    );
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}
