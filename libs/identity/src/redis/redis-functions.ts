/**
 * The Redis Functions library of the identity index and the hot profile state. Each function runs
 * atomically on the server, so a whole batch is resolved or applied in one round trip, and two
 * processors never interleave inside one.
 *
 * Besides the keys it is given, a function touches other keys of the same account (a customer's
 * identifier set, a message's remembered effects). They all carry the account's hash tag, so they
 * live in the declared keys' cluster slot.
 */
export const LIBRARY_VERSION = '23';
/**
 * The version is part of the library's and the functions' names: each release calls the functions it was
 * written against, never another's with its arguments. A release that changes the key layout (layout 2,
 * v20) still needs the old processors stopped before it starts (docs/operations.md): they would write the
 * old layout into an account the new one rebuilds.
 */
export const LIBRARY_NAME = `cdp_v${LIBRARY_VERSION}`;
/**
 * How long a profile merged away is kept for a retried write (cdp_apply): longer than the ingest stream
 * keeps an unacknowledged message (7 days), so no redelivery can come after it is gone.
 */
const MERGED_PROFILE_KEPT_MS = 8 * 24 * 3600 * 1000;

import { CUSTOMER_ENTRIES_LUA } from './customer-entries.js';

export const FN = {
  resolve: `${LIBRARY_NAME}_resolve`,
  apply: `${LIBRARY_NAME}_apply`,
  retire: `${LIBRARY_NAME}_retire`,
  find: `${LIBRARY_NAME}_find`,
};

export const LIBRARY = `#!lua name=${LIBRARY_NAME}
-- version ${LIBRARY_VERSION}
${CUSTOMER_ENTRIES_LUA}

-- cdp_resolve: the identity rules of libs/identity/src/resolution.ts, line for line.
-- KEYS[1] identity hash of the account (identity key -> customer), KEYS[2] its ready marker.
-- ARGV[1] the account's key prefix 'cdp:{<account>}:', ARGV[2] the merge limit, ARGV[3] JSON
-- {m: [message ids], r: [[message number (1-based), record index, seed, born, [identity keys],
--  position of the customer_id key (0-based, -1 if none), customer_id value or '',
--  optional [positions (0-based) of low-confidence keys]]]}.
-- Other keys: <p>c:<bucket> (customer entries: born key and identity keys, customer-entries.ts),
-- <p>cids (customer -> customer_id), <p>merged (loser -> survivor),
-- <p>a:<customer> (customers merged into it), <p>done:<message>
-- (the resolutions of a message until it is settled), <p>unsettled (those messages).
-- Returns JSON [[customer, born, created 0|1, [linked positions], [merged], merge seq, [[customer, reason]]]].
-- <p>mseq counts the account's merges.
local function cdp_resolve(keys, args)
  if redis.call('EXISTS', keys[2]) == 0 then
    return redis.error_reply('CDP_NOT_WARM identity index not loaded')
  end
  local p = args[1]
  local max_merge = tonumber(args[2])
  local input = cjson.decode(args[3])
  local ids_key, cids_key, merged_key = keys[1], p .. 'cids', p .. 'merged'
  local cid_cache = {}
  -- Customer entries read or changed by this call ({born, identity keys...}); the changed ones are
  -- written once, at the end.
  local entries, dirty = {}, {}
  local function entry_of(c)
    local e = entries[c]
    if e == nil then
      e = entry_get(p, c) or false
      entries[c] = e
    end
    return e or nil
  end
  local function born_of(c)
    local e = entry_of(c)
    return e and e[1] or ''
  end
  -- A known customer's born key alone, for the fast path: the entry's first string, without decoding
  -- its identity keys (an entry this call read or changed already answers from there).
  local peeked = {}
  local function peek_born(c)
    local e = entries[c]
    if e ~= nil then return e and e[1] or '' end
    local b = peeked[c]
    if b == nil then
      local key, field = entry_slot(p, c)
      local v = redis.call('HGET', key, field)
      b = ''
      if v then
        local colon = string.find(v, ':', 1, true)
        b = string.sub(v, colon + 1, colon + tonumber(string.sub(v, 1, colon - 1)))
      end
      peeked[c] = b
    end
    return b
  end
  -- A record accepted before the customer's other records lowers its born key (resolution.ts).
  local function lower_born(c, born)
    local e = entry_of(c)
    if not e then e = {''}; entries[c] = e end
    e[1] = born
    dirty[c] = true
  end
  local function add_members(c, members)
    local e = entry_of(c)
    if not e then e = {''}; entries[c] = e end
    for _, m in ipairs(members) do e[#e + 1] = m end
    dirty[c] = true
  end
  local function cid_of(c)
    local v = cid_cache[c]
    if v == nil then
      v = redis.call('HGET', cids_key, c) or false
      cid_cache[c] = v
    end
    return v or nil
  end
  local function older(a, b)
    local x, y = born_of(a), born_of(b)
    if x ~= y then return x < y end
    return a < b
  end
  local function merge(loser, survivor, merged)
    local le = entry_of(loser)
    if le and #le > 1 then
      local members = {}
      for i = 2, #le do members[i - 1] = le[i] end
      add_all('HSET', ids_key, members, survivor)
      add_members(survivor, members)
      -- The loser keeps its born key (its entry names it among the account's customers).
      entries[loser] = {le[1]}
      dirty[loser] = true
    end
    local lc = cid_of(loser)
    if lc and not cid_of(survivor) then
      redis.call('HSET', cids_key, survivor, lc)
      cid_cache[survivor] = lc
    end
    local moved = redis.call('SMEMBERS', p .. 'a:' .. loser)
    table.insert(moved, 1, loser)
    redis.call('DEL', p .. 'a:' .. loser)
    add_all('HSET', merged_key, moved, survivor)
    add_all('SADD', p .. 'a:' .. survivor, moved)
    for _, c in ipairs(moved) do merged[#merged + 1] = c end
  end

  local function resolve(rec)
    local ks, cid_pos = rec[5], rec[6]
    local owners = redis.call('HMGET', ids_key, unpack(ks))
    -- The common case first: every identifier already names one customer (a known visitor again).
    -- Nothing to link, merge or refuse; no tables to build.
    local only = owners[1]
    if only then
      for j = 2, #ks do
        if owners[j] ~= only then only = nil; break end
      end
      if only then
        if rec[4] < peek_born(only) then
          lower_born(only, rec[4])
          return {only, rec[4], 0, {}, {}, 0, {}}, true
        end
        return only, false
      end
    end
    -- Low-confidence identifiers count only when the others know nobody (resolution.ts).
    local low = {}
    if rec[8] then for _, j in ipairs(rec[8]) do low[j + 1] = true end end
    local known, seen, low_owner = {}, {}, nil
    for j = 1, #ks do
      local o = owners[j]
      if o and low[j] then
        if not low_owner then low_owner = o end
      elseif o and not seen[o] then
        seen[o] = true
        known[#known + 1] = o
      end
    end
    if #known == 0 and low_owner then known[1] = low_owner end
    local record_cid = nil
    local anchor = nil
    if cid_pos >= 0 then
      record_cid = rec[7]
      anchor = owners[cid_pos + 1] or nil
    else
      anchor = known[1]
    end
    local conflicts, joined = {}, {}
    if #known == 1 and (not record_cid or anchor) then
      -- The common case: one customer, which the record's own customer_id (if any) already names.
      joined[1] = known[1]
    else
      local cid = record_cid
      if not cid and anchor then cid = cid_of(anchor) end
      if not cid then
        for _, c in ipairs(known) do
          local v = cid_of(c)
          if v then cid = v; break end
        end
      end
      for _, c in ipairs(known) do
        local other = cid_of(c)
        if other == nil or other == cid then
          joined[#joined + 1] = c
        else
          conflicts[#conflicts + 1] = {c, 'customer_id'}
        end
      end
    end
    if #joined > max_merge then
      local others = {}
      for _, c in ipairs(joined) do if c ~= anchor then others[#others + 1] = c end end
      table.sort(others, older)
      local kept, is_kept = {}, {}
      if anchor then kept[1] = anchor end
      for _, c in ipairs(others) do if #kept < max_merge then kept[#kept + 1] = c end end
      for _, c in ipairs(kept) do is_kept[c] = true end
      for _, c in ipairs(joined) do
        if not is_kept[c] then conflicts[#conflicts + 1] = {c, 'merge_limit'} end
      end
      joined = kept
    end
    local customer, created, merged, seq = nil, 0, {}, 0
    if #joined == 0 then
      customer = 'c_' .. string.sub(redis.sha1hex(rec[3]), 1, 24)
      created = 1
      entries[customer] = {rec[4]}
      dirty[customer] = true
    else
      table.sort(joined, older)
      customer = joined[1]
      if #joined > 1 then seq = redis.call('INCR', p .. 'mseq') end
      for k = 2, #joined do merge(joined[k], customer, merged) end
    end
    local lowered = created == 0 and rec[4] < born_of(customer)
    if lowered then lower_born(customer, rec[4]) end
    local linked, fields, members = {}, {}, {}
    for j = 1, #ks do
      if not owners[j] then
        linked[#linked + 1] = j - 1
        fields[#fields + 1] = ks[j]
        fields[#fields + 1] = customer
        members[#members + 1] = ks[j]
        if j == cid_pos + 1 and not cid_of(customer) then
          redis.call('HSET', cids_key, customer, record_cid)
          cid_cache[customer] = record_cid
        end
      end
    end
    if #fields > 0 then
      redis.call('HSET', ids_key, unpack(fields))
      add_members(customer, members)
    end
    local effects = created == 1 or #linked > 0 or #merged > 0 or #conflicts > 0 or lowered
    -- The born key travels with the link rows, or alone when lowered; other records do not need it.
    local born = ''
    if #linked > 0 or lowered then born = born_of(customer) end
    return {customer, born, created, linked, merged, seq, conflicts}, effects
  end

  local remembered = {}
  for i, m in ipairs(input.m) do
    local v = redis.call('GET', p .. 'done:' .. m)
    if v then remembered[i] = cjson.decode(v) end
  end
  -- Each resolution is encoded once, for the reply and for the message's remembered effects alike.
  local fresh, changed, out = {}, {}, {}
  for i, rec in ipairs(input.r) do
    local mi = rec[1]
    if remembered[mi] then
      out[i] = cjson.encode(remembered[mi][rec[2] + 1])
    else
      local res, effects = resolve(rec)
      -- The fast path gives the customer alone: its resolution has nothing but the customer.
      local encoded
      if type(res) == 'string' then
        encoded = '[' .. cjson.encode(res) .. ',"",0,[],[],0,[]]'
      else
        encoded = cjson.encode(res)
      end
      fresh[mi] = fresh[mi] or {}
      fresh[mi][rec[2] + 1] = encoded
      if effects then changed[mi] = true end
      out[i] = encoded
    end
  end
  for c in pairs(dirty) do entry_set(p, c, entries[c]) end
  for mi in pairs(changed) do
    redis.call('SET', p .. 'done:' .. input.m[mi], '[' .. table.concat(fresh[mi], ',') .. ']', 'EX', 604800)
    redis.call('SADD', p .. 'unsettled', input.m[mi])
  end
  return '[' .. table.concat(out, ',') .. ']'
end

-- KEYS: one profile hash per customer touched. ARGV[1] JSON [[key index, {field: JSON text | null},
-- [key indexes of profiles merged into it], redact 0|1, at (decimal text) or absent], ...] in order; ARGV[2] the account's key prefix
-- 'cdp:{<account>}:'; ARGV[3] JSON [customer id of each key]. A merged profile is folded into its survivor
-- field by field in acceptance order (fold), then renamed away. Every update bumps the field __v. Returns JSON
-- [[key index, [field, value, ...], survivor key index or -1], ...]: the final state of every touched
-- profile, and the last state of every merged one.
-- Redaction (spec "Compliance opt-out"): field __r marks a redacted profile. Redacting clears every field
-- but __v and sets opted_in false (an already redacted profile keeps its opted_in); a survivor absorbing a redacted profile is redacted; on a redacted
-- profile an update may only change opted_in.
-- Acceptance order (field-order.ts): field __t:<field> holds the at of the update that last wrote the field
-- (kept when it unsets it, and by a redaction); an update with an at writes only the fields whose __t is
-- not higher, and stamps them. A merged profile's __t fields are folded with its values (fold).
-- <p>pr:<bucket> list the customers with a profile hash (a rebuild finds their keys from them;
-- customer-entries.ts).
-- Phone index: <p>ph:<phone JSON text> is the set of customers whose profile holds exactly that phone,
-- kept here, in the same atomic call, whenever a phone is set, changed, unset or merged away.
-- ARGV[4] (optional) the account's ready marker: while it is missing (Redis flushed or restarted, a
-- rebuild under way), nothing is applied, as cdp_resolve resolves nothing: a profile written into an
-- emptied account would hold only this update's fields, and reach the store as the whole profile.
-- The name first and last name give (values are JSON text): applyProfileUpdate of @cdp/domain.
local function parts_name(first, last)
  local parts = {}
  for _, v in ipairs({first or false, last or false}) do
    if v then
      local s = cjson.decode(v)
      if type(s) == 'string' and s ~= '' then parts[#parts + 1] = s end
    end
  end
  return table.concat(parts, ' ')
end

local function name_from_parts(key)
  local first, last = unpack(redis.call('HMGET', key, 'first_name', 'last_name'))
  return parts_name(first, last)
end

-- Whether a name (JSON text or false) is absent or exactly what first and last name give.
local function follows_parts(name, first, last)
  return not name or cjson.decode(name) == parts_name(first, last)
end

-- Folds a merged profile (its HGETALL) into the survivor's hash, field by field in acceptance order
-- (foldFields of profile-fold.ts, rule for rule): the higher __t:<field> wins, an unset included; a field
-- without a time is older than a timed one; where neither has one, the survivor's value wins and the
-- loser's fills a gap; equal times keep the survivor's. A name that follows first and last name on both
-- sides is derived again from the folded parts. Returns whether the merged profile was redacted.
local function fold(key, flat)
  local values, times, redacted = {}, {}, false
  for i = 1, #flat, 2 do
    local f = flat[i]
    if f == '__r' then
      redacted = true
    elseif string.sub(f, 1, 4) == '__t:' then
      times[string.sub(f, 5)] = flat[i + 1]
    elseif f ~= '__v' then
      values[f] = flat[i + 1]
    end
  end
  local name_follows = follows_parts(unpack(redis.call('HMGET', key, 'name', 'first_name', 'last_name')))
    and follows_parts(values['name'] or false, values['first_name'], values['last_name'])
  local fields = {}
  for f in pairs(values) do fields[f] = true end
  for f in pairs(times) do fields[f] = true end
  for f in pairs(fields) do
    if not (f == 'name' and name_follows) then
      local mine = redis.call('HGET', key, '__t:' .. f)
      local wins
      if times[f] then
        wins = not mine or tonumber(times[f]) > tonumber(mine)
      else
        wins = not mine and redis.call('HEXISTS', key, f) == 0
      end
      if wins then
        if values[f] then redis.call('HSET', key, f, values[f]) else redis.call('HDEL', key, f) end
        if times[f] then redis.call('HSET', key, '__t:' .. f, times[f]) end
      end
    end
  end
  if name_follows then
    local name = name_from_parts(key)
    if name == '' then redis.call('HDEL', key, 'name') else redis.call('HSET', key, 'name', cjson.encode(name)) end
  end
  return redacted
end

-- cdp_apply: a batch's profile updates, in order (redis-profile-state.adapter.ts). Each customer's keys are
-- on its account shard's prefix. KEYS: the profile hashes of the call's own customers (one shard's on a
-- cluster; any on a single server). ARGV[1] JSON [[customer (0-based), {field: JSON value or null},
-- [absorbed customers], redact 0|1, optional acceptance order]], ARGV[2] JSON [customer ids], ARGV[3] JSON
-- [each customer's shard prefix], ARGV[4] '1' to refuse unless every shard of the call is loaded, ARGV[5]
-- JSON [[hash, kept hash] of each customer past #KEYS]: a loser on another shard, read by the caller,
-- folded here and retired on its own shard by cdp_retire.
local function cdp_apply(keys, args)
  local updates = cjson.decode(args[1])
  local customers = cjson.decode(args[2])
  local prefixes = cjson.decode(args[3])
  local outside = cjson.decode(args[5])
  if args[4] == '1' then
    local checked = {}
    for i = 1, #keys do
      local pre = prefixes[i]
      if not checked[pre] then
        if redis.call('EXISTS', pre .. 'pready') == 0 then
          return redis.error_reply('CDP_NOT_WARM profiles not loaded')
        end
        checked[pre] = true
      end
    end
  end
  local touched, gone, out, phone_before = {}, {}, {}, {}
  local function remember(i)
    if phone_before[i] == nil then phone_before[i] = redis.call('HGET', keys[i], 'phone') or false end
  end
  for _, u in ipairs(updates) do
    local ki = u[1] + 1
    local key = keys[ki]
    remember(ki)
    local fresh = u[4] == 1
    local was_redacted = redis.call('HEXISTS', key, '__r') == 1
    local own_opted = redis.call('HGET', key, 'opted_in')
    local redacted = was_redacted or fresh
    for _, l in ipairs(u[3] or {}) do
      local li = l + 1
      local flat, kept
      if li <= #keys then
        remember(li)
        flat = redis.call('HGETALL', keys[li])
      else
        flat, kept = outside[li - #keys][1], outside[li - #keys][2]
      end
      if #flat > 0 then
        -- Fields win by acceptance order, so folding the same loser again changes nothing.
        if fold(key, flat) then redacted = true end
        if li <= #keys then
          -- Kept, not deleted, for as long as the ingest stream keeps a message: a write retried after a
          -- crash or a failure (Redis already folded, the store not yet) absorbs it again and must give
          -- the store the same merged row (else the loser stays live there).
          local pm = prefixes[li] .. 'pm:' .. customers[li]
          redis.call('RENAME', keys[li], pm)
          redis.call('PEXPIRE', pm, ${MERGED_PROFILE_KEPT_MS})
          profile_unlisted(prefixes[li], customers[li])
          gone[li] = true
        end
        out[#out + 1] = {l, flat, u[1]}
      else
        if li <= #keys then kept = redis.call('HGETALL', prefixes[li] .. 'pm:' .. customers[li]) end
        if #kept > 0 then out[#out + 1] = {l, kept, u[1]} end
      end
    end
    if redis.call('HINCRBY', key, '__v', 1) == 1 then profile_listed(prefixes[ki], customers[ki]) end
    -- Only the fields no update accepted later wrote already (after the fold: a loser's times count).
    local at = u[5]
    local sent = u[2]
    if at then
      sent = {}
      for field, value in pairs(u[2]) do
        local t = redis.call('HGET', key, '__t:' .. field)
        if not t or tonumber(t) <= tonumber(at) then sent[field] = value end
      end
    end
    local function stamp(field)
      if at then redis.call('HSET', key, '__t:' .. field, at) end
    end
    if redacted then
      local kept = 'false'
      if was_redacted and own_opted then kept = own_opted end
      local fields = redis.call('HKEYS', key)
      local drop = {}
      for _, f in ipairs(fields) do
        if f ~= '__v' and string.sub(f, 1, 4) ~= '__t:' then drop[#drop + 1] = f end
      end
      if #drop > 0 then redis.call('HDEL', key, unpack(drop)) end
      redis.call('HSET', key, '__r', '1', 'opted_in', kept)
      local opted = sent['opted_in']
      if opted == cjson.null then
        redis.call('HDEL', key, 'opted_in')
        stamp('opted_in')
      elseif opted ~= nil then
        redis.call('HSET', key, 'opted_in', opted)
        stamp('opted_in')
      end
    else
      -- name follows first and last name while it is absent or what they give, or once null unsets it.
      local follows = sent['name'] == cjson.null
      if sent['name'] == nil then
        local had = redis.call('HGET', key, 'name')
        follows = not had or cjson.decode(had) == name_from_parts(key)
      end
      for field, value in pairs(sent) do
        if value == cjson.null then
          redis.call('HDEL', key, field)
        else
          redis.call('HSET', key, field, value)
        end
        stamp(field)
      end
      if follows then
        local name = name_from_parts(key)
        if name == '' then redis.call('HDEL', key, 'name') else redis.call('HSET', key, 'name', cjson.encode(name)) end
      end
    end
    touched[ki] = true
  end
  for i, before in pairs(phone_before) do
    local after = false
    if not gone[i] then after = redis.call('HGET', keys[i], 'phone') or false end
    if before ~= after then
      if before then redis.call('SREM', prefixes[i] .. 'ph:' .. before, customers[i]) end
      if after then redis.call('SADD', prefixes[i] .. 'ph:' .. after, customers[i]) end
    end
  end
  for i = 1, #keys do
    if touched[i] and not gone[i] then out[#out + 1] = {i - 1, redis.call('HGETALL', keys[i]), -1} end
  end
  return cjson.encode(out)
end

-- cdp_retire: the second step of a merge across shards, on the loser's shard, after cdp_apply folded it
-- into its survivor. KEYS[1] the loser's profile hash; ARGV[1] its shard prefix, ARGV[2] its customer id,
-- ARGV[3] the version (__v) the caller read and folded. Moves the hash aside as cdp_apply does a loser on
-- its own shard, unless it changed since it was read (an update applied meanwhile): then 0, and the
-- caller folds it again. 1 once it is retired, or already was.
local function cdp_retire(keys, args)
  local v = redis.call('HGET', keys[1], '__v')
  if not v then return 1 end
  if v ~= args[3] then return 0 end
  local phone = redis.call('HGET', keys[1], 'phone')
  local pm = args[1] .. 'pm:' .. args[2]
  redis.call('RENAME', keys[1], pm)
  redis.call('PEXPIRE', pm, ${MERGED_PROFILE_KEPT_MS})
  profile_unlisted(args[1], args[2])
  if phone then redis.call('SREM', args[1] .. 'ph:' .. phone, args[2]) end
  return 1
end

-- cdp_find: the customer an identity key resolves to now and the customers merged into it, in one read
-- (IdentityIndex.find; a lookup asked lookup and absorbedBy in two round trips before).
-- KEYS[1] identity hash of the account; ARGV[1] the account's key prefix, ARGV[2] the identity key.
-- Returns {} for an unknown identifier, else {customer, absorbed customers...}.
local function cdp_find(keys, args)
  local customer = redis.call('HGET', keys[1], args[2])
  if not customer then return {} end
  local out = redis.call('SMEMBERS', args[1] .. 'a:' .. customer)
  table.insert(out, 1, customer)
  return out
end

redis.register_function('${FN.resolve}', cdp_resolve)
redis.register_function('${FN.apply}', cdp_apply)
redis.register_function('${FN.retire}', cdp_retire)
redis.register_function{function_name='${FN.find}', callback=cdp_find, flags={'no-writes'}}
`;
