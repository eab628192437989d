import { parentPort } from 'node:worker_threads';
import { encodeEventsBody, type EventsEncodeContext } from '../events/events-codec.js';

/** A thread of IngestCodec: reads and encodes request bodies, one message in, one answer out. */
interface Job {
  id: number;
  bytes: Uint8Array;
  context: EventsEncodeContext;
}

// Loaded: bodies may come (IngestCodec reads them itself until then).
parentPort!.postMessage({ ready: true });

parentPort!.on('message', ({ id, bytes, context }: Job) => {
  try {
    parentPort!.postMessage({ id, result: encodeEventsBody(bytes, context) });
  } catch (err) {
    parentPort!.postMessage({ id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
});
