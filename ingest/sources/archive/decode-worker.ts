/**
 * A decode worker (node:worker_threads): batches of raw logs in, their decodings out, in order. The code is
 * decode.ts's decodeBatch, the very function the main thread runs when ARCHIVE_DECODE_WORKERS is 0; an
 * error that is not a log's own decode failure is sent back with its name, message and stack.
 */
import { parentPort } from 'node:worker_threads';
import { decodeBatch } from './decode.ts';
import { packDecodings, type DecodeReply, type DecodeRequest } from './decode-wire.ts';

const port = parentPort;
if (port === null) throw new Error('decode-worker.ts runs as a worker thread (see decode-pool.ts)');

port.on('message', (request: DecodeRequest) => {
  let reply: DecodeReply;
  try {
    reply = { id: request.id, decodings: packDecodings(decodeBatch(request.logs)) };
  } catch (error) {
    const { name, message, stack } = error instanceof Error ? error : new Error(String(error));
    reply = { id: request.id, error: { name, message, stack: stack ?? '' } };
  }
  // The fills' numbers are moved, not copied.
  port.postMessage(reply, 'decodings' in reply ? [reply.decodings.numbers.buffer, reply.decodings.fill.buffer] : []);
});
