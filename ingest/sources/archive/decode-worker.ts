/**
 * A decode worker (node:worker_threads): the topics and data of a batch of logs in, their facts out, in order
 * (decode-wire.ts: decodeLog's third step, viem's ABI decoding and the rules, the same code the main thread
 * runs when `decodeWorkers` is 0). An error that is not a log's own decode failure is sent back with its
 * name, message and stack.
 */
import { parentPort } from 'node:worker_threads';
import { decodeFacts, packFacts, type DecodeReply, type DecodeRequest } from './decode-wire.ts';

const port = parentPort;
if (port === null) throw new Error('decode-worker.ts runs as a worker thread (see decode-pool.ts)');

port.on('message', (request: DecodeRequest) => {
  let reply: DecodeReply;
  try {
    reply = { id: request.id, facts: packFacts(decodeFacts(request)) };
  } catch (error) {
    const { name, message, stack } = error instanceof Error ? error : new Error(String(error));
    reply = { id: request.id, error: { name, message, stack: stack ?? '' } };
  }
  // The fills' numbers are moved, not copied.
  port.postMessage(reply, 'facts' in reply ? [reply.facts.numbers.buffer, reply.facts.fill.buffer] : []);
});
