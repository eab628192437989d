import type { RedisLibrary } from '@cdp/redis';

/**
 * The Redis Functions library of the order state: a line-for-line port of `applyOrderChangeInOrder`
 * (@cdp/domain), run atomically on the server so that a batch is applied in one round trip and two
 * processors never interleave inside one. A library of its own (not the identity library's), so each
 * can change its version without reloading the other.
 *
 * Hash of an order: v (version), cu (customer), pe (kept purchase event id), pts (its time), pa (its
 * `at`, when it had one), ps / pt (the units it put in the tally), pd (JSON list of purchase events kept
 * until one accepted before them came), s / t (tally of subtotal / total in 1/10000 units), adj (returns, refunds, cancels), c (cancelled),
 * cf (cancelled in full), fa (lowest acceptance order `at` of its events), f:<field> (JSON value),
 * t:<field> (time of that value) and a:<field> (the `at` of the change that set it, when it had one).
 * Applied hash of an order: change id -> version it produced.
 * Pending hash of an order: change id -> JSON of an entity update waiting for an order event accepted
 * before it (`applyOrderChangeInOrder`); applied, in acceptance order, by the call that applies that event.
 * Index of a shard's orders: a sorted set, order id -> when its keys expire (ms). A rebuild finds
 * the keys to delete from it (no keyspace scan); a call drops the expired members of those it touches.
 * An order's keys expire `retention` ms after its last applied change (CDP_ORDER_RETENTION_DAYS).
 *
 * A call takes orders of any number of account shards, each with its shard's ready marker and index:
 * on a single server a whole batch is one call (atomic, as before the sharding), on a cluster one call
 * per shard (a call may touch one slot; a shard's keys share one). A change whose id the order's applied
 * hash holds is answered from it and writes nothing, so a batch applied again (a redelivery after a
 * crash between two shards' calls on a cluster) moves no tally twice.
 */
export const ORDER_LIBRARY_VERSION = '6';
/**
 * The version is in the library's and the function's names, as the identity library's is: a processor of
 * the release before calls its own code, never this one with its arguments (v5 took one shard's keys;
 * v6 takes the ready marker and index of every shard the call touches). The keys are the same, so both
 * may run side by side during an upgrade.
 */
export const ORDER_LIBRARY_NAME = `cdp_orders_v${ORDER_LIBRARY_VERSION}`;
export const ORDER_APPLY_FN = `${ORDER_LIBRARY_NAME}_apply`;
export const ORDER_LIBRARY: RedisLibrary = {
  name: ORDER_LIBRARY_NAME,
  code: `#!lua name=${ORDER_LIBRARY_NAME}
-- version ${ORDER_LIBRARY_VERSION}
local function negative(units)
  if units == '0' or string.sub(units, 1, 1) == '-' then return units end
  return '-' .. units
end
local function at_of(c)
  if c.at then return tonumber(c.at) end
  return 0
end
-- Rule 5 (fieldIsNewer): by time; a tie goes to the change accepted later.
local function newer(order, name, c)
  local t = redis.call('HGET', order, 't:' .. name)
  if not t then return true end
  local ts, current = tonumber(c.ts), tonumber(t)
  if ts ~= current then return ts > current end
  return at_of(c) >= (tonumber(redis.call('HGET', order, 'a:' .. name)) or 0)
end
-- Keeps a purchase for the order (keepPurchase): its time, customer, acceptance order and amounts.
local function keep_purchase(order, c)
  redis.call('HSET', order, 'pe', c.id, 'pts', c.ts, 'ps', c.s or '0', 'pt', c.t or '0')
  if c.at then redis.call('HSET', order, 'pa', c.at) else redis.call('HDEL', order, 'pa') end
  if c.cu then redis.call('HSET', order, 'cu', c.cu) end
  if c.s then redis.call('HINCRBY', order, 's', c.s) end
  if c.t then redis.call('HINCRBY', order, 't', c.t) end
end
-- Units as text for HINCRBY (a double prints 1e+15 past 14 digits, and -0 is no integer to Redis;
-- units stay below 2^53).
local function minus(units)
  local n = tonumber(units or '0')
  if n == 0 then return '0' end
  return string.format('%.0f', -n)
end
-- Applies a change not applied before (applyOrderChange); returns the version it gave the order.
local function apply_change(order, applied_ids, c)
  local seq = redis.call('HINCRBY', order, 'v', 1)
  redis.call('HSET', applied_ids, c.id, seq)
  if c.cu and redis.call('HEXISTS', order, 'cu') == 0 then redis.call('HSET', order, 'cu', c.cu) end
  if c.a == 'purchase' then
    local kept = redis.call('HGET', order, 'pe')
    if not kept then
      keep_purchase(order, c)
    else
      local pa = redis.call('HGET', order, 'pa')
      if c.at and pa and tonumber(c.at) < tonumber(pa) then
        -- Accepted before the kept one (acceptedBefore): its amounts replace the kept one's.
        local kept_fields = redis.call('HMGET', order, 'ps', 'pt', 'pd')
        redis.call('HINCRBY', order, 's', minus(kept_fields[1]))
        redis.call('HINCRBY', order, 't', minus(kept_fields[2]))
        local displaced = kept_fields[3] and cjson.decode(kept_fields[3]) or {}
        displaced[#displaced + 1] = kept
        redis.call('HSET', order, 'pd', cjson.encode(displaced))
        keep_purchase(order, c)
      end
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
    if newer(order, name, c) then
      redis.call('HSET', order, 'f:' .. name, value, 't:' .. name, c.ts)
      if c.at then redis.call('HSET', order, 'a:' .. name, c.at) else redis.call('HDEL', order, 'a:' .. name) end
    end
  end
  return seq
end
-- After an order event: the pending updates accepted after the order's first event, in acceptance order.
local function apply_due(order, applied_ids, pending)
  local first = tonumber(redis.call('HGET', order, 'fa') or '0')
  local due = {}
  local flat = redis.call('HGETALL', pending)
  for i = 1, #flat, 2 do
    local u = cjson.decode(flat[i + 1])
    if at_of(u) > first then due[#due + 1] = u end
  end
  table.sort(due, function(a, b) return at_of(a) < at_of(b) end)
  for _, u in ipairs(due) do
    redis.call('HDEL', pending, u.id)
    apply_change(order, applied_ids, u)
  end
end
-- KEYS: first, per shard s (1-based) of the S the call touches, KEYS[2s-1] its ready marker and
-- KEYS[2s] its order index; then, per order i (0-based), KEYS[2S+1+3i] its hash, KEYS[2S+2+3i] its
-- applied ids and KEYS[2S+3+3i] its pending updates. ARGV[1] JSON [[order index, change], ...] where
-- change is {id, k = event|entity, a = action, ts = ms as text, at? (acceptance order as text), cu?,
-- s?, t? (units as text), f = {field: JSON text}}. ARGV[2] '1' while rebuilding (the markers are absent
-- then). ARGV[3] retention in ms. ARGV[4] JSON [[order id, its shard s - 1] per order index]. ARGV[5] S.
-- Returns JSON [[[applied 0|1, seq, recorded 0|1, pending 0|1] per change],
-- [[order index, [field, value, ...]] per touched order]].
local function cdp_orders_apply(keys, args)
  local shards = tonumber(args[5])
  if args[2] ~= '1' then
    -- Every touched shard must be loaded, or nothing is written: a shard not rebuilt yet would take a
    -- change its rebuild then clears.
    local markers = {}
    for s = 1, shards do markers[s] = keys[2 * s - 1] end
    if redis.call('EXISTS', unpack(markers)) < shards then
      return redis.error_reply('CDP_ORDERS_NOT_WARM order state not loaded')
    end
  end
  local changes = cjson.decode(args[1])
  local ids = cjson.decode(args[4])
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local expires = now + tonumber(args[3])
  for s = 1, shards do redis.call('ZREMRANGEBYSCORE', keys[2 * s], '-inf', now) end
  local first = 2 * shards
  local out = {}
  local touched = {}
  for n, entry in ipairs(changes) do
    local base = first + entry[1] * 3
    local order = keys[base + 1]
    local applied_ids = keys[base + 2]
    local pending = keys[base + 3]
    local id = ids[entry[1] + 1]
    local index = keys[2 * id[2] + 2]
    local c = entry[2]
    local seq = redis.call('HGET', applied_ids, c.id)
    local state = 'apply'
    if not seq and c.k == 'entity' then
      local at = at_of(c)
      local exists = redis.call('EXISTS', order) == 1
      if redis.call('HEXISTS', pending, c.id) == 1 then
        state = 'pending'
      elseif not (exists and (at == 0 or tonumber(redis.call('HGET', order, 'fa') or '0') < at)) then
        if at == 0 then
          state = 'dropped'
        else
          state = 'pending'
          redis.call('HSET', pending, c.id, cjson.encode(c))
        end
      end
      if state == 'pending' then
        -- Kept as long as an applied change would be, and indexed with the keys it creates.
        redis.call('ZADD', index, expires, id[1])
        redis.call('PEXPIREAT', pending, expires)
      end
    end
    if state == 'dropped' then
      out[n] = {0, 0, 0, 0}
    elseif state == 'pending' then
      out[n] = {0, 0, 0, 1}
    else
      local applied = 0
      if seq then
        seq = tonumber(seq)
      else
        applied = 1
        seq = apply_change(order, applied_ids, c)
        if c.k == 'event' then
          local fa = redis.call('HGET', order, 'fa')
          if not fa or at_of(c) < tonumber(fa) then redis.call('HSET', order, 'fa', c.at or '0') end
          apply_due(order, applied_ids, pending)
        end
        -- Indexed in the call that creates the keys: a crash cannot leave an order unindexed.
        redis.call('ZADD', index, expires, id[1])
        redis.call('PEXPIREAT', order, expires)
        redis.call('PEXPIREAT', applied_ids, expires)
        redis.call('PEXPIREAT', pending, expires)
      end
      local recorded = 0
      if c.k == 'event' and (c.a ~= 'purchase' or redis.call('HGET', order, 'pe') == c.id) then recorded = 1 end
      out[n] = {applied, seq, recorded, 0}
      touched[entry[1]] = true
    end
  end
  local orders = {}
  for i, _ in pairs(touched) do orders[#orders + 1] = {i, redis.call('HGETALL', keys[first + 1 + i * 3])} end
  return cjson.encode({out, orders})
end
redis.register_function('${ORDER_APPLY_FN}', cdp_orders_apply)
`,
};
