/**
 * Tape download objects in an S3-compatible store: `<prefix><owner folder>/<tape_id>.jsonl.gz`, written
 * once (HEAD finds it on later requests) and handed out as an S3 presigned GET URL (AWS SDK v3
 * presigner, signature V4, valid `expiresInSeconds`). The store checks expiry and the signature itself.
 */
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Config } from '../config.ts';
import type { TapeDownloads, TapeObject } from '../operations/tapes.ts';
import { gzippedLines, ownerFolder } from './downloads.ts';

export type S3Settings = NonNullable<Config['tapes']['download']['s3']>;

function s3ClientOf(settings: S3Settings): S3Client {
  return new S3Client({
    region: settings.region,
    forcePathStyle: settings.forcePathStyle,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    ...(settings.accessKeyId && settings.secretAccessKey
      ? { credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey } }
      : {}),
  });
}

export class S3TapeDownloads implements TapeDownloads {
  readonly kind = 's3';
  readonly #client: S3Client;
  readonly #pending = new Map<string, Promise<void>>();

  constructor(
    private readonly settings: S3Settings,
    private readonly expiresInSeconds: number,
    client: S3Client = s3ClientOf(settings),
  ) {
    this.#client = client;
  }

  objectKey(accountId: string, tapeId: string): string {
    return `${this.settings.prefix}${ownerFolder(accountId)}/${tapeId}.jsonl.gz`;
  }

  /** The presigned GET URL of an object key (no request is made). */
  presign(key: string): Promise<string> {
    return getSignedUrl(this.#client, new GetObjectCommand({ Bucket: this.settings.bucket, Key: key }), {
      expiresIn: this.expiresInSeconds,
    });
  }

  async link(object: TapeObject, _nowSeconds: number): Promise<string> {
    const key = this.objectKey(object.accountId, object.tapeId);
    await this.#ensure(key, object);
    return this.presign(key);
  }

  async #ensure(key: string, object: TapeObject): Promise<void> {
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.settings.bucket, Key: key }));
      return;
    } catch (failure) {
      const status = (failure as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status !== 404) throw failure;
    }
    let pending = this.#pending.get(key);
    if (!pending) {
      pending = (async () => {
        const chunks: Buffer[] = [];
        for await (const chunk of gzippedLines(object.lines())) chunks.push(chunk as Buffer);
        await this.#client.send(
          new PutObjectCommand({
            Bucket: this.settings.bucket,
            Key: key,
            Body: Buffer.concat(chunks),
            ContentType: 'application/gzip',
            ContentEncoding: undefined,
          }),
        );
      })().finally(() => this.#pending.delete(key));
      this.#pending.set(key, pending);
    }
    await pending;
  }
}
