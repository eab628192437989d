import { gunzipSync, gzipSync } from 'node:zlib';
import type { IngestMessage } from '@cdp/contracts';

/** Bodies above this are gzipped on the bus (a 1000-event request shrinks about tenfold); smaller ones are
 * not: compressing costs the API and the processor more CPU than the bytes cost JetStream on a fast link. */
const COMPRESS_ABOVE = 512 * 1024;

export interface EncodedPart {
  id: string;
  data: Uint8Array;
  gzip: boolean;
}

/**
 * A request as bus messages. Normally one; a request whose compressed form is still larger than the
 * server's max_payload is split into parts with ids `<request id>.p<n>`, each a message of its own
 * with distinct event ids (so they are stored and deduplicated independently).
 */
export function encodeIngest(message: IngestMessage, maxPayload: number): EncodedPart[] {
  const whole = encodeOne(message);
  if (whole.data.byteLength <= maxPayload) return [whole];
  if (message.records.length < 2)
    throw new Error(`one record is larger than the bus takes (${maxPayload} bytes)`);
  const parts: EncodedPart[] = [];
  const split = (records: IngestMessage['records'], offset: number): void => {
    const part = { ...message, id: `${message.id}.p${offset}`, records } as IngestMessage;
    const encoded = encodeOne(part);
    if (encoded.data.byteLength <= maxPayload || records.length < 2) {
      if (encoded.data.byteLength > maxPayload)
        throw new Error(`one record is larger than the bus takes (${maxPayload} bytes)`);
      parts.push(encoded);
      return;
    }
    const half = Math.ceil(records.length / 2);
    split(records.slice(0, half), offset);
    split(records.slice(half), offset + half);
  };
  split(message.records, 0);
  return parts;
}

function encodeOne(message: IngestMessage): EncodedPart {
  return encodeText(message.id, JSON.stringify(message));
}

function encodeText(id: string, json: string): EncodedPart {
  const bytes = Buffer.from(json);
  if (bytes.byteLength <= COMPRESS_ABOVE) return { id, data: bytes, gzip: false };
  return { id, data: gzipSync(bytes, { level: 1 }), gzip: true };
}

/** A message already encoded as JSON text, as one bus message; undefined when it must be split. */
export function encodeIngestText(id: string, json: string, maxPayload: number): EncodedPart | undefined {
  const whole = encodeText(id, json);
  return whole.data.byteLength <= maxPayload ? whole : undefined;
}

export function decodeIngest(data: Uint8Array, gzip: boolean): IngestMessage {
  const bytes = gzip ? gunzipSync(data) : data;
  return JSON.parse(
    Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
  ) as IngestMessage;
}
