import { PassThrough, Readable } from 'node:stream';
import { textLines } from './text-lines.js';

describe('textLines', () => {
  it('splits on newlines across chunks, multi-byte characters cut between chunks included', async () => {
    const euro = Buffer.from('€');
    const chunks = [
      Buffer.from('a\nb'),
      euro.subarray(0, 1),
      Buffer.concat([euro.subarray(1), Buffer.from('c\n\nlast')]),
    ];
    const lines: string[] = [];
    for await (const line of textLines(Readable.from(chunks))) lines.push(line);
    expect(lines).toEqual(['a', 'b€c', '', 'last']);
  });

  it('reads no further than the consumer: a slow consumer leaves the rest in the source', async () => {
    const source = new PassThrough({ highWaterMark: 64 });
    const line = `${'x'.repeat(1000)}\n`;
    let written = 0;
    // The source takes lines while it has room, as a file read stream does.
    const fill = () => {
      while (written < 1000 && source.write(line)) written++;
    };
    source.on('drain', fill);
    fill();
    const lines = textLines(source);
    expect((await lines.next()).value).toHaveLength(1000);
    await new Promise((r) => setImmediate(r));
    // Of 1000 lines, only what the stream's buffers hold was written: the reader did not drain it all.
    expect(written).toBeLessThan(20);
    source.destroy();
  });
});
