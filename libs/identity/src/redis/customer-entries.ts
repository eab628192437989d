/**
 * A customer's entry in the identity index: its born key and its identity keys, in one field of a small
 * bucket hash (layout: redis-keys.ts). Many customers share a bucket, so Redis keeps each bucket as one
 * compact listpack instead of a key, a set and a hash entry a customer. An entry is its strings, each
 * written `<length>:<text>` (identity keys may hold any character, so no separator would do), born first.
 *
 * The same rules exist twice, in Lua (CUSTOMER_ENTRIES_LUA, for the functions and rebuild scripts) and in
 * TypeScript (for reads); redis.adapters.spec.ts checks that both agree (identifiers with separators,
 * newlines, NUL and non-ASCII written by the Lua, read back by `identifiersOf`, merged and read again).
 */

/** Customer ids made by cdp_resolve (`c_` + 24 hex digits) spread over 65,536 buckets by their first 4 digits. */
const BUCKETED = /^c_[0-9a-f]{4}/;
/** Any other id (tests' and hand-made ones) goes to one bucket, `_`, whole. */
const OTHER_BUCKET = '_';

/** The bucket (its suffix after `<prefix>c:`) and the field of a customer's entry. */
export function entrySlot(customerId: string): { bucket: string; field: string } {
  return BUCKETED.test(customerId)
    ? { bucket: customerId.slice(2, 6), field: customerId.slice(6) }
    : { bucket: OTHER_BUCKET, field: customerId };
}

export function encodeEntry(strings: readonly string[]): string {
  return strings.map((s) => `${Buffer.byteLength(s)}:${s}`).join('');
}

/** The entry's strings: born, then identity keys. Lengths are in bytes, as Lua counts them. */
export function decodeEntry(entry: string): string[] {
  const bytes = Buffer.from(entry);
  const out: string[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    const colon = bytes.indexOf(0x3a, pos);
    const n = Number(bytes.subarray(pos, colon).toString());
    out.push(bytes.subarray(colon + 1, colon + 1 + n).toString());
    pos = colon + 1 + n;
  }
  return out;
}

/**
 * The Lua side. `p` is the account's key prefix. entry_get returns the strings (or nil), entry_set
 * writes them and records the bucket in <p>cb (the account's buckets, so a rebuild finds them without
 * a keyspace scan). profile_listed / profile_unlisted keep the account's list of customers with a
 * profile hash the same way: bucket hashes <p>pr:<bucket> (field as above, value empty) and <p>prb.
 */
export const CUSTOMER_ENTRIES_LUA = `
local function customer_slot(c)
  if string.find(c, '^c_[0-9a-f][0-9a-f][0-9a-f][0-9a-f]') then
    return string.sub(c, 3, 6), string.sub(c, 7)
  end
  return '${OTHER_BUCKET}', c
end
local function entry_slot(p, c)
  local bucket, field = customer_slot(c)
  return p .. 'c:' .. bucket, field, bucket
end
local function profile_listed(p, c)
  local bucket, field = customer_slot(c)
  if redis.call('HSET', p .. 'pr:' .. bucket, field, '') == 1 then redis.call('SADD', p .. 'prb', bucket) end
end
local function profile_unlisted(p, c)
  local bucket, field = customer_slot(c)
  redis.call('HDEL', p .. 'pr:' .. bucket, field)
end
local function entry_decode(v)
  local out, pos = {}, 1
  while pos <= #v do
    local colon = string.find(v, ':', pos, true)
    local n = tonumber(string.sub(v, pos, colon - 1))
    out[#out + 1] = string.sub(v, colon + 1, colon + n)
    pos = colon + n + 1
  end
  return out
end
local function entry_get(p, c)
  local key, field = entry_slot(p, c)
  local v = redis.call('HGET', key, field)
  if v then return entry_decode(v) end
  return nil
end
local function entry_set(p, c, strings)
  local key, field, bucket = entry_slot(p, c)
  local parts = {}
  for i, s in ipairs(strings) do parts[i] = #s .. ':' .. s end
  if redis.call('HSET', key, field, table.concat(parts)) == 1 then redis.call('SADD', p .. 'cb', bucket) end
end
-- cmd (SADD, or HSET with extra as every field's value) of all items on key, 500 a call: unpack has a
-- limit on how many values it returns, and a customer may own more identifiers than that.
local function add_all(cmd, key, items, extra)
  for i = 1, #items, 500 do
    local chunk = {}
    for j = i, math.min(i + 499, #items) do
      chunk[#chunk + 1] = items[j]
      if extra then chunk[#chunk + 1] = extra end
    end
    redis.call(cmd, key, unpack(chunk))
  end
end
`;

/** The customer id an entry's bucket and field name (entrySlot reversed). */
export function customerOfSlot(bucket: string, field: string): string {
  return bucket === OTHER_BUCKET ? field : `c_${bucket}${field}`;
}
