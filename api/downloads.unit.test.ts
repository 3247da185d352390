/** Tape download links: the S3 presigned URL's shape (no server: presigning is local), and local HMAC links. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { LocalTapeDownloads, ownerFolder } from './downloads.ts';
import { S3TapeDownloads } from './downloads-s3.ts';

describe('S3 presigned download URLs', () => {
  const config = parseConfig({
    S3_BUCKET: 'tape-bucket',
    S3_ENDPOINT: 'https://s3.example.test',
    S3_REGION: 'eu-west-1',
    S3_ACCESS_KEY_ID: 'AKIAEXAMPLE',
    S3_SECRET_ACCESS_KEY: 'secret-example-key',
  });

  it('parses the store from the environment; absent bucket means local downloads', () => {
    expect(config.tapes.download.s3).toEqual({
      bucket: 'tape-bucket',
      endpoint: 'https://s3.example.test',
      region: 'eu-west-1',
      accessKeyId: 'AKIAEXAMPLE',
      secretAccessKey: 'secret-example-key',
      forcePathStyle: true,
      prefix: 'tapes/',
    });
    expect(parseConfig({}).tapes.download.s3).toBeNull();
    expect(parseConfig({}).tapes.download.expiresInSeconds).toBe(3600);
  });

  it('is a SigV4 presigned GET of the object key, valid 3600 s', async () => {
    const downloads = new S3TapeDownloads(config.tapes.download.s3!, config.tapes.download.expiresInSeconds);
    const key = downloads.objectKey('acct-1', 'tape_abc');
    expect(key).toBe(`tapes/${ownerFolder('acct-1')}/tape_abc.jsonl.gz`);
    const url = new URL(await downloads.presign(key));
    expect(`${url.origin}${url.pathname}`).toBe(`https://s3.example.test/tape-bucket/${key}`);
    const query = url.searchParams;
    expect(query.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(query.get('X-Amz-Credential')).toMatch(/^AKIAEXAMPLE\/\d{8}\/eu-west-1\/s3\/aws4_request$/);
    expect(query.get('X-Amz-Expires')).toBe('3600');
    expect(query.get('X-Amz-SignedHeaders')).toBe('host');
    expect(query.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    expect(query.get('X-Amz-Date')).toMatch(/^\d{8}T\d{6}Z$/);
    // The account id never appears in a link.
    expect(url.toString()).not.toContain('acct-1');
  });
});

describe('local signed links', () => {
  it('write the object once, verify genuine links, refuse altered and expired ones', async () => {
    const directory = await mkdtemp(path.join(tmpdir(), 'tapes-'));
    try {
      const config = parseConfig({ DATA_DIR: directory, PUBLIC_URL: 'https://api.example.test/' });
      const downloads = new LocalTapeDownloads(config.tapes.download, 'x'.repeat(32));
      let reads = 0;
      const object = {
        accountId: 'acct-1',
        tapeId: 'tape_1',
        lines: async function* () {
          reads++;
          yield '{"type":"session","ts":1,"state":"start"}';
          yield '{"type":"session","ts":2,"state":"stop"}';
        },
      };
      const link = new URL(await downloads.link(object, 1000));
      await downloads.link(object, 1000);
      expect(reads).toBe(1);
      expect(link.origin).toBe('https://api.example.test');
      const [, , owner, file] = link.pathname.split('/');
      const verdict = downloads.verify(
        owner!,
        file!,
        link.searchParams.get('expires')!,
        link.searchParams.get('sig')!,
        1000,
      );
      expect(verdict).toEqual({ path: path.join(config.tapes.download.directory, owner!, file!) });
      const { readFile } = await import('node:fs/promises');
      expect(gunzipSync(await readFile((verdict as { path: string }).path)).toString()).toBe(
        '{"type":"session","ts":1,"state":"start"}\n{"type":"session","ts":2,"state":"stop"}\n',
      );
      expect(
        downloads.verify(owner!, file!, link.searchParams.get('expires')!, link.searchParams.get('sig')!, 1000 + 3601),
      ).toEqual({ refused: 'expired' });
      expect(downloads.verify(owner!, file!, String(1000 + 7200), link.searchParams.get('sig')!, 1000)).toEqual({
        refused: 'forbidden',
      });
      expect(
        downloads.verify(
          owner!,
          'tape_2.jsonl.gz',
          link.searchParams.get('expires')!,
          link.searchParams.get('sig')!,
          1000,
        ),
      ).toEqual({ refused: 'forbidden' });
      expect(
        downloads.verify('../etc', file!, link.searchParams.get('expires')!, link.searchParams.get('sig')!, 1000),
      ).toEqual({ refused: 'forbidden' });
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
