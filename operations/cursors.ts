/**
 * Opaque, forward-only cursors: base64url of `[endpoint, scope, position]` plus an HMAC tag under a
 * server secret. Undecodable or structurally wrong is `bad_cursor`; decodable with a wrong tag is a
 * forgery and reads as no cursor (page 1), as the contract requires; a genuine cursor of another
 * endpoint or another trader/market is `bad_cursor`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { errors } from './errors.ts';

const TAG_BYTES = 16;
const TOKEN = /^[A-Za-z0-9_-]{1,4096}\.[A-Za-z0-9_-]{22}$/;
const envelopeSchema = z.tuple([z.string(), z.string(), z.array(z.union([z.string(), z.number()]))]);

export interface CursorCodec<Position> {
  encode(scope: string, position: Position): string;
  /** The position a cursor names; undefined for no cursor or a forged one; throws `bad_cursor` otherwise. */
  decode(token: string | undefined, scope: string): Position | undefined;
}

export class Cursors {
  readonly #secret: Buffer;

  constructor(secret: string) {
    this.#secret = Buffer.from(secret, 'utf8');
  }

  #tag(payload: string): Buffer {
    return createHmac('sha256', this.#secret).update(payload).digest().subarray(0, TAG_BYTES);
  }

  /**
   * A codec for one endpoint. A position is stored as a flat array of strings and numbers, validated
   * by `schema` on the way back in.
   */
  codec<Position, const Items extends readonly (string | number)[]>(
    endpoint: string,
    toItems: (position: Position) => Items,
    schema: z.ZodType<Items>,
    fromItems: (items: Items) => Position,
  ): CursorCodec<Position> {
    return {
      encode: (scope, position) => {
        const payload = Buffer.from(JSON.stringify([endpoint, scope, toItems(position)]), 'utf8').toString('base64url');
        return `${payload}.${this.#tag(payload).toString('base64url')}`;
      },
      decode: (token, scope) => {
        if (token === undefined || token === '') return undefined;
        if (!TOKEN.test(token)) throw errors.badCursor();
        const [payload, tagText] = token.split('.') as [string, string];
        let envelope: z.infer<typeof envelopeSchema>;
        try {
          envelope = envelopeSchema.parse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
        } catch {
          throw errors.badCursor();
        }
        const tag = Buffer.from(tagText, 'base64url');
        if (tag.length !== TAG_BYTES || !timingSafeEqual(tag, this.#tag(payload))) return undefined;
        const [cursorEndpoint, cursorScope, items] = envelope;
        if (cursorEndpoint !== endpoint || cursorScope !== scope) throw errors.badCursor();
        const parsed = schema.safeParse(items);
        if (!parsed.success) throw errors.badCursor();
        return fromItems(parsed.data);
      },
    };
  }
}
