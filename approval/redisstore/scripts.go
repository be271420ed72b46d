package redisstore

// The Lua scripts of the store. Each runs atomically on the Redis server and
// touches only keys of one hash slot: every key it names or builds carries the
// hash tag {<shard>} of one session (see doc.go). Keys that a script builds
// itself, rather than receiving them in KEYS, are built from ARGV[1], the
// "base" <prefix>{<shard>}: of the key in KEYS[1], so they hash to the same
// slot; Redis 7 in cluster mode checks this at run time and would fail the
// script otherwise ("Script attempted to access keys that do not hash to the
// same slot"), and TestClusterSlots runs every script on a cluster node.
//
// Record fields (a HASH): see doc.go. Times that scripts compare are split
// into whole unix milliseconds and the nanoseconds within that millisecond,
// two numbers that a Lua double holds exactly, so "now < expires_at" is
// judged to the nanosecond, exactly as time.Time.Before in the memory store.
// Times that scripts only store (decided_at) are RFC 3339 text built in Go.
//
// Replies lost in transit: go-redis re-sends a command whose connection
// broke before the reply arrived (EOF, reset, read timeout), although the
// script may already have run. Each transition therefore records, in the
// field "tok", a nonce unique to the Store call and the answer it gave; a
// re-sent call that finds its own nonce answers as the first run did instead
// of reporting a conflict. Without it a claim whose reply was lost would come
// back already_claimed, and the approval would stay claimed with nobody to
// run it.
//
// Outcomes arrive as JSON built in Go and are stored and published verbatim:
// scripts never re-encode a JSON document (cjson would turn an empty array
// into {}); the one cjson call encodes the payload hash as a JSON string.

// putLua stores a new pending approval and makes it its session's pending
// approval, superseding the one that was pending.
//
//	KEYS[1]  record key   <prefix>{<shard>}:ap:<id>
//	KEYS[2]  pointer key  <prefix>{<shard>}:pending:<session>
//	ARGV[1]  base <prefix>{<shard>}:  — the old approval's record is
//	         base.."ap:"..old_id: it belongs to the same session, so its id
//	         carries the same shard and its key is in the same slot
//	ARGV[2]  id
//	ARGV[3]  TTL of the record and the pointer, in ms
//	ARGV[4]  the superseded outcome (JSON)
//	ARGV[5]  decided_at of the superseded approval (the new one's created_at)
//	ARGV[6]  outcome channel
//	ARGV[7]  retention of ended records, in ms
//	ARGV[8]  the record's JSON
//	ARGV[9]  nonce of this call
//	ARGV[10…] field, value, … of the record's mutable and indexed fields
//
// Returns {"conflict"}, {"ok"} or {"superseded", HGETALL of the old record}.
const putLua = `
if redis.call('HSETNX', KEYS[1], 'rec', ARGV[8]) == 0 then
  local n, old = string.match(redis.call('HGET', KEYS[1], 'tok') or '', '^put (%S+) (%S*)$')
  if n == ARGV[9] then
    -- this very call, re-sent after a lost reply: answer as the first time
    if old ~= '' then
      return {'superseded', redis.call('HGETALL', ARGV[1] .. 'ap:' .. old)}
    end
    return {'ok'}
  end
  return {'conflict'}
end
redis.call('HSET', KEYS[1], unpack(ARGV, 10))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local res = {'ok'}
local sup = ''
local old = redis.call('GET', KEYS[2])
if old and old ~= ARGV[2] then
  local ok = ARGV[1] .. 'ap:' .. old
  if redis.call('HGET', ok, 'state') == 'pending' then
    redis.call('HSET', ok, 'state', 'superseded', 'at', ARGV[5], 'via', 'system', 'outcome', ARGV[4])
    redis.call('PEXPIRE', ok, ARGV[7])
    redis.call('PUBLISH', ARGV[6], '{"id":"' .. old .. '","outcome":' .. ARGV[4] .. '}')
    res = {'superseded', redis.call('HGETALL', ok)}
    sup = old
  end
end
redis.call('HSET', KEYS[1], 'tok', 'put ' .. ARGV[9] .. ' ' .. sup)
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return res
`

// claimLua is the one check-and-transition every decision passes; it
// follows memstore's claimLocked step by step.
//
//	KEYS[1]  record key <prefix>{<shard>}:ap:<id>
//	ARGV[1]  base <prefix>{<shard>}: — the session pointer
//	         base.."pending:"..session and the idempotency cache
//	         base.."idem:"..len(session)..":"..session..":"..key are built
//	         from it: same shard tag, same slot
//	ARGV[2]  id           ARGV[3] intent      ARGV[4] payload hash
//	ARGV[5]  actor        ARGV[6] source      ARGV[7] comment
//	ARGV[8]  now, unix ms ARGV[9] now, ns within the ms
//	ARGV[10] now as RFC 3339 text (decided_at)
//	ARGV[11] rejected outcome  ARGV[12] expired outcome  ARGV[13] superseded outcome
//	ARGV[14] outcome channel   ARGV[15] retention of ended records, in ms
//	ARGV[16] nonce of this call
//	ARGV[17] where the decision was taken: channel.."\n"..chat_id, or "" when unknown
//
// Returns {"missing"} or {code, ended 0|1, HGETALL of the record, cached
// result JSON or ""}.
const claimLua = `
local rk, base, id, intent, nonce = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[16]
local f = redis.call('HMGET', rk, 'state', 'hash', 'session', 'exp', 'expns', 'idem', 'req', 'amode', 'anr', 'ausers', 'tok', 'chat')
local state = f[1]
if not state then
  return {'missing'}
end
local session = f[3]
local pk = base .. 'pending:' .. session
local function result(code, ended, cached)
  return {code, ended, redis.call('HGETALL', rk), cached or ''}
end
-- the result cached under the idempotency key, if its payload hash matches
local function cached()
  local idem = f[6]
  if idem and idem ~= '' then
    local v = redis.call('GET', base .. 'idem:' .. string.len(session) .. ':' .. session .. ':' .. idem)
    local want = '{"hash":' .. cjson.encode(f[2]) .. ','
    if v and string.sub(v, 1, string.len(want)) == want then
      return v
    end
  end
  return ''
end
-- mark records the answer of a transition under this call's nonce
local function mark(code, ended)
  redis.call('HSET', rk, 'tok', 'claim ' .. nonce .. ' ' .. code .. ' ' .. ended)
end
local n, tcode, tended = string.match(f[11] or '', '^claim (%S+) (%S+) (%d)$')
if n == nonce then
  -- this very call, re-sent after a lost reply: answer as the first time
  local c = ''
  if tcode == 'claimed' and tended == '0' then
    c = cached()
  end
  return result(tcode, tonumber(tended), c)
end
local function finish(st, outcome)
  redis.call('HSET', rk, 'state', st, 'at', ARGV[10], 'outcome', outcome)
  if redis.call('GET', pk) == id then
    redis.call('DEL', pk)
  end
  redis.call('PEXPIRE', rk, ARGV[15])
  redis.call('PUBLISH', ARGV[14], '{"id":"' .. id .. '","outcome":' .. outcome .. '}')
end
local nowms, nowns = tonumber(ARGV[8]), tonumber(ARGV[9])
local expms, expns = tonumber(f[4]), tonumber(f[5])
local before = nowms < expms or (nowms == expms and nowns < expns)

if intent == 'expire' then
  if state ~= 'pending' then
    return result('already_claimed', 0)
  end
  if before then
    return result('not_yet', 0)
  end
  redis.call('HSET', rk, 'via', 'system')
  finish('expired', ARGV[12])
  mark('expired', 1)
  return result('expired', 1)
end
if state == 'superseded' then
  return result('superseded', 0)
elseif state == 'expired' then
  return result('expired', 0)
elseif state ~= 'pending' then
  return result('already_claimed', 0)
end
if redis.call('GET', pk) ~= id then
  -- Put supersedes atomically, so this cannot happen; treat it as
  -- superseded rather than let a stale approval run.
  redis.call('HSET', rk, 'via', 'system')
  finish('superseded', ARGV[13])
  mark('superseded', 1)
  return result('superseded', 1)
end

-- approval.ApproverRule.Allows(actor, requester, verb, inChat)
local actor, requester = ARGV[5], f[7] or ''
local verb = 'approve'
if intent == 'reject' then
  verb = 'reject'
end
local allowed
if actor == '' then
  allowed = false
elseif verb == 'reject' and actor == requester then
  allowed = true
elseif f[9] == '1' and actor == requester then
  allowed = false
elseif f[8] == 'chat' then
  -- the requester, or a decision taken in the approval's own chat
  allowed = actor == requester or (ARGV[17] ~= '' and f[12] == ARGV[17])
elseif f[8] == 'users' then
  allowed = false
  if f[10] then
    for _, u in ipairs(cjson.decode(f[10])) do
      if u == actor then
        allowed = true
        break
      end
    end
  end
else
  allowed = actor == requester
end
if not allowed then
  return result('unauthorized', 0)
end

if ARGV[4] ~= f[2] then
  return result('tampered', 0)
end
if not before then
  redis.call('HSET', rk, 'via', 'system')
  finish('expired', ARGV[12])
  mark('expired', 1)
  return result('expired', 1)
end
redis.call('HSET', rk, 'by', actor, 'via', ARGV[6], 'comment', ARGV[7])
if intent == 'reject' then
  finish('rejected', ARGV[11])
  mark('claimed', 1)
  return result('claimed', 1)
end
redis.call('HSET', rk, 'state', 'claimed', 'at', ARGV[10])
redis.call('DEL', pk)
mark('claimed', 0)
return result('claimed', 0, cached())
`

// completeLua moves a claimed approval to executed, failed or frozen,
// caches an executed outcome under the idempotency key, and publishes.
//
//	KEYS[1]  record key <prefix>{<shard>}:ap:<id>
//	ARGV[1]  base <prefix>{<shard>}: — the idempotency cache key is built
//	         from it (same shard tag, same slot)
//	ARGV[2]  id           ARGV[3] state      ARGV[4] outcome (JSON)
//	ARGV[5]  cache TTL in ms (0: do not cache)
//	ARGV[6]  outcome channel   ARGV[7] retention of ended records, in ms
//	ARGV[8]  nonce of this call
//
// Returns {"ok", card…} (the card references recorded by then, so the
// caller settles cards added after the claim too), {"missing"}, or {the
// state that is not claimed}.
const completeLua = `
local rk = KEYS[1]
local f = redis.call('HMGET', rk, 'state', 'hash', 'session', 'idem', 'tok', 'ncards')
if not f[1] then
  return {'missing'}
end
local function ok()
  local res = {'ok'}
  for i = 1, tonumber(f[6] or '0') do
    res[i + 1] = redis.call('HGET', rk, 'card:' .. i)
  end
  return res
end
if f[1] ~= 'claimed' then
  if f[5] == 'complete ' .. ARGV[8] then
    return ok() -- this very call, re-sent after a lost reply
  end
  return {f[1]}
end
if ARGV[3] == 'executed' and f[4] and f[4] ~= '' and tonumber(ARGV[5]) > 0 then
  local ck = ARGV[1] .. 'idem:' .. string.len(f[3]) .. ':' .. f[3] .. ':' .. f[4]
  redis.call('SET', ck, '{"hash":' .. cjson.encode(f[2]) .. ',"outcome":' .. ARGV[4] .. '}', 'PX', ARGV[5])
end
redis.call('HSET', rk, 'state', ARGV[3], 'outcome', ARGV[4], 'tok', 'complete ' .. ARGV[8])
redis.call('PEXPIRE', rk, ARGV[7])
redis.call('PUBLISH', ARGV[6], '{"id":"' .. ARGV[2] .. '","outcome":' .. ARGV[4] .. '}')
return ok()
`

// cancelLua ends a pending approval as cancelled.
//
//	KEYS[1]  record key <prefix>{<shard>}:ap:<id>
//	ARGV[1]  base <prefix>{<shard>}: — the session pointer is built from it
//	ARGV[2]  id   ARGV[3] outcome (JSON)   ARGV[4] now as RFC 3339 text
//	ARGV[5]  outcome channel   ARGV[6] retention of ended records, in ms
//	ARGV[7]  nonce of this call
//
// Returns {"missing"}, {"not_pending", HGETALL} or {"cancelled", HGETALL}.
const cancelLua = `
local rk, id = KEYS[1], ARGV[2]
local f = redis.call('HMGET', rk, 'state', 'session', 'tok')
if not f[1] then
  return {'missing'}
end
if f[1] ~= 'pending' then
  if f[3] == 'cancel ' .. ARGV[7] then
    -- this very call, re-sent after a lost reply
    return {'cancelled', redis.call('HGETALL', rk)}
  end
  return {'not_pending', redis.call('HGETALL', rk)}
end
redis.call('HSET', rk, 'state', 'cancelled', 'via', 'system', 'at', ARGV[4], 'outcome', ARGV[3], 'tok', 'cancel ' .. ARGV[7])
local pk = ARGV[1] .. 'pending:' .. f[2]
if redis.call('GET', pk) == id then
  redis.call('DEL', pk)
end
redis.call('PEXPIRE', rk, ARGV[6])
redis.call('PUBLISH', ARGV[5], '{"id":"' .. id .. '","outcome":' .. ARGV[3] .. '}')
return {'cancelled', redis.call('HGETALL', rk)}
`

// addCardsLua appends card references (JSON, one per ARGV after the
// nonce) to a record as fields card:<n>, n counting from 1 in ncards. The
// nonce of the last call is kept in "ctok" (not "tok": adding cards must not
// hide a claim's nonce from its own re-send), so a re-sent call does not
// append twice. It answers with the record as it is afterwards, so that the
// caller learns in the same round trip whether a decision ended the
// approval while its card was being sent (and then settles the new cards).
//
//	KEYS[1]  record key <prefix>{<shard>}:ap:<id>
//	ARGV[1]  nonce of this call   ARGV[2…] the cards
//
// Returns nil when the record is missing, else its HGETALL.
const addCardsLua = `
local f = redis.call('HMGET', KEYS[1], 'state', 'ncards', 'ctok')
if not f[1] then
  return false
end
if f[3] ~= ARGV[1] then
  local n = tonumber(f[2] or '0')
  for i = 2, #ARGV do
    redis.call('HSET', KEYS[1], 'card:' .. (n + i - 1), ARGV[i])
  end
  redis.call('HSET', KEYS[1], 'ncards', n + #ARGV - 1, 'ctok', ARGV[1])
end
return redis.call('HGETALL', KEYS[1])
`

// pendingLua reads the session's pending approval in one round trip.
//
//	KEYS[1]  pointer key <prefix>{<shard>}:pending:<session>
//	ARGV[1]  base <prefix>{<shard>}: — the record key base.."ap:"..id is
//	         built from it (same session, same shard tag, same slot)
//
// Returns nil when there is none, else the record's HGETALL.
const pendingLua = `
local id = redis.call('GET', KEYS[1])
if not id then
  return false
end
local rk = ARGV[1] .. 'ap:' .. id
if redis.call('HGET', rk, 'state') ~= 'pending' then
  return false
end
return redis.call('HGETALL', rk)
`
