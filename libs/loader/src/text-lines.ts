import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/**
 * The `\n`-separated lines of a stream, read only as fast as they are consumed: beside the line being
 * handed out, at most a chunk of the stream is held. readline's async iterator is not used here because
 * it reads up to 1024 lines ahead of a slow consumer, and a line of the staging file is a whole bus
 * message (hundreds of KB): a publisher paced by the processors would have the file in memory.
 */
export async function* textLines(input: Readable): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let partial = '';
  for await (const chunk of input) {
    const text = partial + decoder.write(chunk as Buffer);
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
      yield text.slice(start, end);
      start = end + 1;
    }
    partial = text.slice(start);
  }
  partial += decoder.end();
  if (partial) yield partial;
}
