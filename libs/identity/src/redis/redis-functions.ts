/**
 * The Redis Functions library of the identity index and the hot profile state. Each function runs
 * atomically on the server, so a whole batch is resolved or applied in one round trip, and two
 * processors never interleave inside one.
 */
export const LIBRARY_NAME = 'cdp';
export const LIBRARY_VERSION = '1';

export const LIBRARY = `#!lua name=${LIBRARY_NAME}
-- version ${LIBRARY_VERSION}

-- KEYS[1] identity hash of the account, KEYS[2] its ready marker.
-- ARGV[1] JSON {r: [[identity key, ...] per record], n: [new customer id per record]}.
-- Returns JSON [[customer id, created 0|1, [indexes of identifiers linked now]] per record].
local function cdp_resolve(keys, args)
  if redis.call('EXISTS', keys[2]) == 0 then
    return redis.error_reply('CDP_NOT_WARM identity index not loaded')
  end
  local input = cjson.decode(args[1])
  local out = {}
  for i, ids in ipairs(input.r) do
    local customer = false
    for _, k in ipairs(ids) do
      customer = redis.call('HGET', keys[1], k)
      if customer then break end
    end
    local created = 0
    if not customer then
      customer = input.n[i]
      created = 1
    end
    local linked = {}
    for j, k in ipairs(ids) do
      if redis.call('HSETNX', keys[1], k, customer) == 1 then linked[#linked + 1] = j - 1 end
    end
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
