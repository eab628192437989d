/**
 * A set of (kind, text) keys numbered 0, 1, 2, … in the order they were added, held without a JS
 * string or object per key: the text lives in a byte arena, the keys are found through an
 * open-addressing hash table of typed arrays. A million keys cost their text plus about 20 bytes
 * each, where a `Map<string, …>` costs ~100.
 *
 * Equality is exact: a hash only narrows the candidates, every hit is compared with the stored text
 * code unit by code unit, so two keys whose hashes collide are still two keys (an identity index
 * must never take one identifier for another).
 *
 * Encoding, canonical so that equal texts have equal bytes: a text whose code units are all below 256
 * is stored one byte a unit (Latin-1), any other as UTF-16 code units, two bytes each. A key is
 * `varint(kind) varint(length * 2 + wide) units…`. The arena is cut in chunks of at most 16 MiB, so
 * growing it never copies more than one chunk, and an address is `chunk << 24 | position`: at most
 * 256 chunks, 4 GiB of text a set.
 */
export class InternedStrings {
  /**
   * @param hash the hash of a key; tests pass a poor one to make keys collide.
   * @param chunkSize the largest chunk (at most 16 MiB); tests pass a small one to cross many.
   */
  constructor(
    private readonly hash: (kind: number, text: string) => number = hashOf,
    private readonly chunkSize = CHUNK_SIZE,
  ) {
    this.chunks = [Buffer.alloc(Math.min(FIRST_CHUNK, chunkSize))];
  }

  private chunks: Buffer[];
  /** Bytes used in the last chunk. */
  private fill = 0;
  /** Key → its address in the arena. */
  private addresses = new Uint32Array(FIRST_COLUMNS);
  /** Key → its hash, so that the table grows without reading the arena, and probes compare hashes first. */
  private hashes = new Int32Array(FIRST_COLUMNS);
  /** Open addressing, linear probing: key + 1, 0 for an empty bucket. */
  private table = new Int32Array(FIRST_TABLE);
  private mask = FIRST_TABLE - 1;
  private count = 0;
  /** The last key `find` missed, and its hash. */
  private missKind = 0;
  private missText: string | undefined;
  private missHash = 0;
  /** Chunk and position of the last key read by `header`. */
  private at = 0;

  /** How many keys the set holds. */
  get size(): number {
    return this.count;
  }

  /** Bytes held: arena chunks, columns and table (what the keys cost, slack included). */
  get bytes(): number {
    let arena = 0;
    for (const c of this.chunks) arena += c.length;
    return arena + this.addresses.byteLength + this.hashes.byteLength + this.table.byteLength;
  }

  /** The number of the key, or -1 when the set does not hold it. */
  find(kind: number, text: string): number {
    const h = this.hash(kind, text);
    const { table, mask, hashes } = this;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const k = table[i]! - 1;
      if (k < 0) {
        // A miss is usually followed by adding the key: `add` takes the hash from here.
        this.missKind = kind;
        this.missText = text;
        this.missHash = h;
        return -1;
      }
      if (hashes[k] === h && this.equals(k, kind, text)) return k;
    }
  }

  /** The number of the key, added if the set did not hold it. */
  intern(kind: number, text: string): number {
    const found = this.find(kind, text);
    return found >= 0 ? found : this.add(kind, text);
  }

  /** Adds a key the set does not hold (check with `find`), and returns its number. */
  add(kind: number, text: string): number {
    const k = this.count;
    if (k === this.addresses.length) {
      const size = grown(k);
      this.addresses = resized(this.addresses, size);
      this.hashes = resized(this.hashes, size);
    }
    if ((k + 1) * 4 > this.table.length * 3) this.rehash(this.table.length * 2);
    const h = text === this.missText && kind === this.missKind ? this.missHash : this.hash(kind, text);
    this.missText = undefined;
    this.addresses[k] = this.append(kind, text);
    this.hashes[k] = h;
    const { table, mask } = this;
    let i = h & mask;
    while (table[i] !== 0) i = (i + 1) & mask;
    table[i] = k + 1;
    this.count = k + 1;
    return k;
  }

  /** The key's kind. */
  kind(key: number): number {
    this.header(key);
    return this.kindRead;
  }

  /** The key's text. */
  text(key: number): string {
    const lengthWide = this.header(key);
    const chunk = this.chunks[this.at >>> CHUNK_BITS]!;
    const start = this.at & POSITION_MASK;
    const length = lengthWide >>> 1;
    return lengthWide & 1
      ? chunk.toString('utf16le', start, start + length * 2)
      : chunk.toString('latin1', start, start + length);
  }

  private kindRead = 0;

  /**
   * Reads the key's header: sets `kindRead`, and `at` to the address of its first code unit;
   * returns length * 2 + wide.
   */
  private header(key: number): number {
    const address = this.addresses[key]!;
    const chunk = this.chunks[address >>> CHUNK_BITS]!;
    let p = address & POSITION_MASK;
    let kind = 0;
    for (let shift = 0; ; shift += 7) {
      const b = chunk[p++]!;
      kind |= (b & 0x7f) << shift;
      if (b < 0x80) break;
    }
    let lengthWide = 0;
    for (let shift = 0; ; shift += 7) {
      const b = chunk[p++]!;
      lengthWide |= (b & 0x7f) << shift;
      if (b < 0x80) break;
    }
    this.kindRead = kind;
    this.at = (address & ~POSITION_MASK) | p;
    return lengthWide >>> 0;
  }

  private equals(key: number, kind: number, text: string): boolean {
    const lengthWide = this.header(key);
    if (this.kindRead !== kind || lengthWide >>> 1 !== text.length) return false;
    const chunk = this.chunks[this.at >>> CHUNK_BITS]!;
    const p = this.at & POSITION_MASK;
    const n = text.length;
    // Canonical encoding: a wide key holds a unit above 255, so a text equal unit for unit is wide too.
    if (lengthWide & 1) {
      for (let i = 0; i < n; i++)
        if ((chunk[p + 2 * i]! | (chunk[p + 2 * i + 1]! << 8)) !== text.charCodeAt(i)) return false;
    } else {
      for (let i = 0; i < n; i++) if (chunk[p + i] !== text.charCodeAt(i)) return false;
    }
    return true;
  }

  /** Writes a key into the arena; returns its address. */
  private append(kind: number, text: string): number {
    const n = text.length;
    let wide = 0;
    for (let i = 0; i < n; i++)
      if (text.charCodeAt(i) > 0xff) {
        wide = 1;
        break;
      }
    const needed = varintSize(kind) + varintSize(n * 2 + wide) + n * (1 + wide);
    if (needed > this.chunkSize) throw new RangeError('an identity key is longer than a chunk of the arena');
    let chunk = this.chunks[this.chunks.length - 1]!;
    if (this.fill + needed > chunk.length) {
      if (this.fill + needed <= this.chunkSize) {
        // A young chunk grows in place (doubling), so a small set stays small; addresses keep valid.
        let size = chunk.length * 2;
        while (size < this.fill + needed) size *= 2;
        const bigger = Buffer.alloc(Math.min(size, this.chunkSize));
        chunk.copy(bigger, 0, 0, this.fill);
        chunk = this.chunks[this.chunks.length - 1] = bigger;
      } else {
        if (this.chunks.length === MAX_CHUNKS)
          throw new RangeError(`an interned set is limited to ${MAX_CHUNKS} chunks of text (4 GiB)`);
        chunk = Buffer.alloc(this.chunkSize);
        this.chunks.push(chunk);
        this.fill = 0;
      }
    }
    const address = ((this.chunks.length - 1) << CHUNK_BITS) | this.fill;
    let p = writeVarint(chunk, this.fill, kind);
    p = writeVarint(chunk, p, n * 2 + wide);
    if (wide) p += chunk.write(text, p, 'utf16le');
    else p += chunk.write(text, p, 'latin1');
    this.fill = p;
    return address >>> 0;
  }

  private rehash(size: number): void {
    const table = new Int32Array(size);
    const mask = size - 1;
    for (let k = 0; k < this.count; k++) {
      let i = this.hashes[k]! & mask;
      while (table[i] !== 0) i = (i + 1) & mask;
      table[i] = k + 1;
    }
    this.table = table;
    this.mask = mask;
  }
}

const CHUNK_BITS = 24;
const CHUNK_SIZE = 1 << CHUNK_BITS;
const POSITION_MASK = CHUNK_SIZE - 1;
const MAX_CHUNKS = 256;
const FIRST_CHUNK = 256;
const FIRST_COLUMNS = 8;
const FIRST_TABLE = 16;

/** FNV-1a over the kind and the text's code units, then murmur3's finalizer to spread the bits. */
export function hashOf(kind: number, text: string): number {
  let h = Math.imul(0x811c9dc5 ^ kind, 0x01000193);
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}

/** The next capacity of a column: half as much again, so that slack stays under a third. */
export function grown(size: number): number {
  return Math.max(8, Math.ceil(size * 1.5));
}

type Column = Uint32Array | Int32Array | Float64Array | Uint8Array;

/** A copy of a typed array with more room (zero-filled). */
export function resized<T extends Column>(column: T, size: number): T {
  const next = new (column.constructor as new (n: number) => T)(size);
  next.set(column);
  return next;
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    size++;
  }
  return size;
}

function writeVarint(chunk: Buffer, p: number, n: number): number {
  while (n >= 0x80) {
    chunk[p++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 0x80);
  }
  chunk[p++] = n;
  return p;
}
