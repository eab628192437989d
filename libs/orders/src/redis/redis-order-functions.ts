import type { RedisLibrary } from '@cdp/redis';

/**
 * The Redis Functions library of the order state: a line-for-line port of `applyOrderChange`
 * (@cdp/domain), run atomically on the server so that a batch is applied in one round trip and two
 * processors never interleave inside one. A library of its own (not the identity library's), so each
 * can change its version without reloading the other.
 *
 * Hash of an order: v (version), cu (customer), pe (kept purchase event id), pts (its time), s / t
 * (tally of subtotal / total in 1/10000 units), adj (returns, refunds, cancels), c (cancelled),
 * cf (cancelled in full), f:<field> (JSON value) and t:<field> (time of that value).
 * Applied hash of an order: change id -> version it produced.
 * Index of the account's orders: a sorted set, order id -> when its keys expire (ms). A rebuild finds
 * the keys to delete from it (no keyspace scan); every call drops the members already expired.
 * An order's keys expire `retention` ms after its last applied change (CDP_ORDER_RETENTION_DAYS).
 */
export const ORDER_LIBRARY_NAME = 'cdp_orders';
export const ORDER_LIBRARY_VERSION = '2';
export const ORDER_LIBRARY: RedisLibrary = {
  name: ORDER_LIBRARY_NAME,
  code: `#!lua name=${ORDER_LIBRARY_NAME}
-- version ${ORDER_LIBRARY_VERSION}
local function negative(units)
  if units == '0' or string.sub(units, 1, 1) == '-' then return units end
  return '-' .. units
end
-- KEYS[1] the account's ready marker, KEYS[2] its order index; then, per order i (0-based), KEYS[3+2i]
-- its hash and KEYS[4+2i] its applied ids. ARGV[1] JSON [[order index, change], ...] where change is
-- {id, k = event|entity, a = action, ts = ms as text, cu?, s?, t? (units as text), f = {field: JSON text}}.
-- ARGV[2] '1' while rebuilding (the marker is absent then). ARGV[3] retention in ms. ARGV[4] JSON
-- [order id per order index]. Returns JSON
-- [[[applied 0|1, seq, recorded 0|1] per change], [[order index, [field, value, ...]] per touched order]].
local function cdp_orders_apply(keys, args)
  if args[2] ~= '1' and redis.call('EXISTS', keys[1]) == 0 then
    return redis.error_reply('CDP_ORDERS_NOT_WARM order state not loaded')
  end
  local changes = cjson.decode(args[1])
  local ids = cjson.decode(args[4])
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local expires = now + tonumber(args[3])
  redis.call('ZREMRANGEBYSCORE', keys[2], '-inf', now)
  local out = {}
  local touched = {}
  for n, entry in ipairs(changes) do
    local order = keys[3 + entry[1] * 2]
    local applied_ids = keys[4 + entry[1] * 2]
    local c = entry[2]
    if c.k == 'entity' and redis.call('EXISTS', order) == 0 then
      out[n] = {0, 0, 0}
    else
      local applied = 0
      local seq = redis.call('HGET', applied_ids, c.id)
      if seq then
        seq = tonumber(seq)
      else
        applied = 1
        seq = redis.call('HINCRBY', order, 'v', 1)
        redis.call('HSET', applied_ids, c.id, seq)
        if c.cu and redis.call('HEXISTS', order, 'cu') == 0 then redis.call('HSET', order, 'cu', c.cu) end
        if c.a == 'purchase' then
          if redis.call('HSETNX', order, 'pe', c.id) == 1 then
            redis.call('HSET', order, 'pts', c.ts)
            if c.cu then redis.call('HSET', order, 'cu', c.cu) end
            if c.s then redis.call('HINCRBY', order, 's', c.s) end
            if c.t then redis.call('HINCRBY', order, 't', c.t) end
          end
        elseif c.a ~= 'update' then
          redis.call('HINCRBY', order, 'adj', 1)
          if c.s then redis.call('HINCRBY', order, 's', negative(c.s)) end
          if c.t then redis.call('HINCRBY', order, 't', negative(c.t)) end
          if c.a == 'cancel' then
            redis.call('HSET', order, 'c', '1')
            if not c.s and not c.t then redis.call('HSET', order, 'cf', '1') end
          end
        end
        for name, value in pairs(c.f) do
          local at = redis.call('HGET', order, 't:' .. name)
          if not at or tonumber(c.ts) >= tonumber(at) then
            redis.call('HSET', order, 'f:' .. name, value, 't:' .. name, c.ts)
          end
        end
        -- Indexed in the call that creates the keys: a crash cannot leave an order unindexed.
        redis.call('ZADD', keys[2], expires, ids[entry[1] + 1])
        redis.call('PEXPIREAT', order, expires)
        redis.call('PEXPIREAT', applied_ids, expires)
      end
      local recorded = 0
      if c.k == 'event' and (c.a ~= 'purchase' or redis.call('HGET', order, 'pe') == c.id) then recorded = 1 end
      out[n] = {applied, seq, recorded}
      touched[entry[1]] = true
    end
  end
  local orders = {}
  for i, _ in pairs(touched) do orders[#orders + 1] = {i, redis.call('HGETALL', keys[3 + i * 2])} end
  return cjson.encode({out, orders})
end
redis.register_function('cdp_orders_apply', cdp_orders_apply)
`,
};
