/**
 * The Redis Functions library of the identity index and the hot profile state. Each function runs
 * atomically on the server, so a whole batch is resolved or applied in one round trip, and two
 * processors never interleave inside one.
 */
export const LIBRARY_NAME = 'cdp';
export const LIBRARY_VERSION = '2';

export const LIBRARY = `#!lua name=${LIBRARY_NAME}
-- version ${LIBRARY_VERSION}

-- KEYS[1] identity hash of the account, KEYS[2] its ready marker.
-- ARGV[1] JSON {r: [[identity key, ...] per record], s: [seed of the new customer id per record]}.
-- A new customer's id is 'c_' and the first 24 hex digits of the SHA-1 of its seed (as in @cdp/domain).
-- Returns JSON [[customer id, created 0|1, [indexes of identifiers linked now]] per record].
local function cdp_resolve(keys, args)
  if redis.call('EXISTS', keys[2]) == 0 then
    return redis.error_reply('CDP_NOT_WARM identity index not loaded')
  end
  local input = cjson.decode(args[1])
  local out = {}
  for i, ids in ipairs(input.r) do
    local found = redis.call('HMGET', keys[1], unpack(ids))
    local customer = false
    for j = 1, #ids do
      if found[j] then customer = found[j]; break end
    end
    local created = 0
    if not customer then
      customer = 'c_' .. string.sub(redis.sha1hex(input.s[i]), 1, 24)
      created = 1
    end
    local linked = {}
    local fields = {}
    for j = 1, #ids do
      if not found[j] then
        linked[#linked + 1] = j - 1
        fields[#fields + 1] = ids[j]
        fields[#fields + 1] = customer
      end
    end
    if #fields > 0 then redis.call('HSET', keys[1], unpack(fields)) end
    out[i] = {customer, created, linked}
  end
  return cjson.encode(out)
end

-- KEYS: one profile hash per customer touched. ARGV[1] JSON [[key index, {field: JSON text | null}], ...]
-- in order. Every update bumps the field __v. Returns JSON [[key index, [field, value, ...]], ...] with
-- the final state of every touched profile.
local function cdp_apply(keys, args)
  local updates = cjson.decode(args[1])
  local touched = {}
  for _, u in ipairs(updates) do
    local key = keys[u[1] + 1]
    redis.call('HINCRBY', key, '__v', 1)
    for field, value in pairs(u[2]) do
      if value == cjson.null then
        redis.call('HDEL', key, field)
      else
        redis.call('HSET', key, field, value)
      end
    end
    touched[u[1] + 1] = true
  end
  local out = {}
  for i = 1, #keys do
    if touched[i] then out[#out + 1] = {i - 1, redis.call('HGETALL', keys[i])} end
  end
  return cjson.encode(out)
end

redis.register_function('cdp_resolve', cdp_resolve)
redis.register_function('cdp_apply', cdp_apply)
`;
