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
// Record fields (a HASH): see doc.go, which also says why no value is longer
// than 64 bytes (longer ones are split into chunks: see libLua). Times that
// scripts compare are split into whole unix milliseconds and the nanoseconds
// within that millisecond, two numbers that a Lua double holds exactly, so
// "now < expires_at" is judged to the nanosecond, exactly as time.Time.Before
// in the memory store. Times that scripts only store (decided_at) are RFC
// 3339 text built in Go.
//
// Replies lost in transit: go-redis re-sends a command whose connection
// broke before the reply arrived (EOF, reset, read timeout), although the
// script may already have run. Each transition therefore records, in the
// field "t", a nonce unique to the Store call and the answer it gave; a
// re-sent call that finds its own nonce answers as the first run did instead
// of reporting a conflict. Without it a claim whose reply was lost would come
// back already_claimed, and the approval would stay claimed with nobody to
// run it.
//
// Outcomes arrive as JSON built in Go and are stored and published verbatim:
// scripts never re-encode a JSON document (cjson would turn an empty array
// into {}); the one cjson call encodes the payload hash as a JSON string.

// libLua is put in front of every script that reads or writes a record.
//
// long and setlong read and write values that may be longer than chunk
// (64) bytes: field name holds the first 64 bytes, name.1, name.2, … the
// next 64 each, so that no value exceeds Redis's default
// hash-max-listpack-value and the record stays a listpack. A value of
// exactly 64 bytes has no name.1; a value longer than maxSplit is kept whole
// (the record is then a hashtable anyway). long(rk, name, v) takes the
// field's value v as HMGET returned it and adds the chunks, if any.
// setlong(rk, name, value, …) writes in one HSET; it leaves no chunks of an
// older value behind because none can exist: every field it writes (the
// decision's by, via, cm, v, the outcome o, a card c<n>) is written at most
// once in a record's life, except j, which an edit rewrites (the claim
// script deletes j's old chunks first), and by, via, cm and o, which
// resolveLua rewrites after deleting their old chunks.
//
// hashtext turns the stored payload hash back into its text: "h" followed by
// the 32 bytes of a lowercase hex SHA-256, or "=" followed by any other text
// as it was given.
//
// record reads a record's fields: HMGET of s (the state, always there) and
// the fields named; a missing record has no s.
const libLua = `
local function long(rk, name, v)
  if v and string.len(v) == 64 then
    local parts, i = {v}, 1
    while true do
      local more = redis.call('HGET', rk, name .. '.' .. i)
      if not more then
        break
      end
      parts[i + 1] = more
      if string.len(more) < 64 then
        break
      end
      i = i + 1
    end
    return table.concat(parts)
  end
  return v
end
-- allows is approval.Approval.AllowsIn (approval/mayapprove.go, which
-- states the rule), clause by clause in the same order, on the record rk:
-- requester, mode (field m; absent: requester), notreq (field x, "1": four
-- eyes), users (field u, a JSON array), ch and ci (the approval's chat),
-- ac and ai (its approvers' chat, approve_in; absent when it has none) as
-- HMGET returned them; dch and dci are where the decision was taken (""
-- when unknown). The steps' fields eu and ep are read at clause 5 only, so
-- a decision of the approval's own approvers costs nothing more.
local function allows(rk, actor, requester, verb, mode, notreq, users, ch, ci, ac, ai, dch, dci)
  -- 1. nobody (Approval.settles)
  if actor == '' then
    return false
  end
  -- 2. withdraw: the requester may always reject their own request
  if verb == 'reject' and actor == requester then
    return true
  end
  -- 3. four eyes: the requester is out of clauses 4 and 5
  if notreq == '1' and actor == requester then
    return false
  end
  -- 4. the approval's own rule (Approval.admits)
  if mode == 'chat' then
    -- the requester is in their own chat by definition, not in an
    -- approvers' chat
    if actor == requester and not ai then
      return true
    end
    -- Approval.InChat: its approvers' chat when it has one, else its own
    if dci ~= '' then
      if ai then
        if dch == (long(rk, 'ac', ac) or '') and dci == long(rk, 'ai', ai) then
          return true
        end
      elseif dch == (long(rk, 'ch', ch) or '') and dci == long(rk, 'ci', ci) then
        return true
      end
    end
  elseif mode == 'users' then
    local list = long(rk, 'u', users)
    if list then
      for _, u in ipairs(cjson.decode(list)) do
        if u == actor then
          return true
        end
      end
    end
  elseif actor == requester then
    return true
  end
  -- 5. the escalation steps taken (Approval.stepAdmits): their people
  -- (field eu, Approval.EscalationUsers) from anywhere, anyone deciding in
  -- the chat of a step of mode chat (field ep, Approval.EscalationPlaces,
  -- each "<channel>\n<chat id>")
  local eu = long(rk, 'eu', redis.call('HGET', rk, 'eu'))
  if eu then
    for _, u in ipairs(cjson.decode(eu)) do
      if u == actor then
        return true
      end
    end
  end
  if dci ~= '' then
    local ep = long(rk, 'ep', redis.call('HGET', rk, 'ep'))
    if ep then
      local here = dch .. '\n' .. dci
      for _, p in ipairs(cjson.decode(ep)) do
        if p == here then
          return true
        end
      end
    end
  end
  -- 6. nobody else
  return false
end
local function setlong(rk, ...)
  local args, kv = {}, {...}
  for j = 1, #kv, 2 do
    if #args >= 1000 then
      redis.call('HSET', rk, unpack(args))
      args = {}
    end
    local name, v = kv[j], kv[j + 1]
    local n = string.len(v)
    if n <= 64 or n > 16384 then
      args[#args + 1] = name
      args[#args + 1] = v
    else
      args[#args + 1] = name
      args[#args + 1] = string.sub(v, 1, 64)
      local i = 1
      while i * 64 < n do
        args[#args + 1] = name .. '.' .. i
        args[#args + 1] = string.sub(v, i * 64 + 1, i * 64 + 64)
        i = i + 1
      end
    end
  end
  redis.call('HSET', rk, unpack(args))
end
local function hashtext(h)
  if not h then
    return ''
  end
  if string.sub(h, 1, 1) == 'h' then
    -- (struct and one format: half the time of a format per byte)
    return string.format('%08x%08x%08x%08x%08x%08x%08x%08x', struct.unpack('>I4I4I4I4I4I4I4I4', h, 2))
  end
  return string.sub(h, 2)
end
local function record(rk, ...)
  return redis.call('HMGET', rk, 's', ...)
end
-- session returns the record's session: field k, or else ch..":"..ci..K.
local function session(rk, k, K, ch, ci)
  return long(rk, 'k', k) or ((long(rk, 'ch', ch) or '') .. ':' .. (long(rk, 'ci', ci) or '') .. (long(rk, 'K', K) or ''))
end
`

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
//	ARGV[8]  nonce of this call
//	ARGV[9…] field, value, … of the record but "s" (already split into
//	         chunks by the Go side)
//
// Returns {"conflict"}, {"ok"} or {"superseded", HGETALL of the old record,
// old id}.
const putLua = libLua + `
if redis.call('HSETNX', KEYS[1], 's', 'pending') == 0 then
  local n, old = string.match(redis.call('HGET', KEYS[1], 't') or '', '^put (%S+) (%S*)$')
  if n == ARGV[8] then
    -- this very call, re-sent after a lost reply: answer as the first time
    if old ~= '' then
      return {'superseded', redis.call('HGETALL', ARGV[1] .. 'ap:' .. old), old}
    end
    return {'ok'}
  end
  return {'conflict'}
end
local res = {'ok'}
local sup = ''
local old = redis.call('GET', KEYS[2])
if old and old ~= ARGV[2] then
  local ok = ARGV[1] .. 'ap:' .. old
  if record(ok)[1] == 'pending' then
    setlong(ok, 's', 'superseded', 'at', ARGV[5], 'via', 'system', 'o', ARGV[4])
    redis.call('PEXPIRE', ok, ARGV[7])
    redis.call('PUBLISH', ARGV[6], '{"id":"' .. old .. '","outcome":' .. ARGV[4] .. '}')
    res = {'superseded', redis.call('HGETALL', ok), old}
    sup = old
  end
end
redis.call('HSET', KEYS[1], 't', 'put ' .. ARGV[8] .. ' ' .. sup, unpack(ARGV, 9, math.min(#ARGV, 206)))
for i = 207, #ARGV, 200 do
  redis.call('HSET', KEYS[1], unpack(ARGV, i, math.min(i + 199, #ARGV)))
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
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
//	ARGV[2]  id           ARGV[3] intent
//	ARGV[4]  payload hash, encoded as the field "h" is
//	ARGV[5]  actor        ARGV[6] source      ARGV[7] comment
//	ARGV[8]  now, unix ms ARGV[9] now, ns within the ms
//	ARGV[10] now as RFC 3339 text (decided_at)
//	ARGV[11] rejected outcome  ARGV[12] expired outcome  ARGV[13] superseded outcome
//	ARGV[14] outcome channel   ARGV[15] retention of ended records, in ms
//	ARGV[16] nonce of this call
//	ARGV[17] channel and ARGV[18] chat where the decision was taken ("" when
//	         the chat is unknown)
//	ARGV[19] payload hash as text (for the result cache, whose entries
//	         hold it so; turning the stored form into text costs more Lua)
//	ARGV[20] per-call verdicts of an approve (approval.Verdicts: one byte
//	         per call, 'a' or 'r'), "" when every call runs
//	ARGV[21] an edit's payload hash, encoded as the field "h" is ("" when
//	         the approve is no edit); ARGV[22] its field j; ARGV[23] the
//	         proposed hash, encoded so, kept as the field "ph". (ARGV[19] is
//	         then the edited hash as text: the result cache is looked up
//	         for the calls that will run.)
//	ARGV[24] the approver's grant choice (approve only; "" when none)
//	ARGV[25] the approver's vote (approval.Vote as JSON), counted where the
//	         record has a quorum (field qu): votes are the fields y1, y2, …
//	KEYS[2]  (optional) a de-duplication mark <prefix>{<shard>}:seen:<key>
//	         (approval.ClaimRequest.Mark), set first (SET NX PX, its value
//	         this call's nonce) for ARGV[26] ms; set already by another
//	         call, the claim answers {"duplicate"} and changes nothing
//
// Returns {"missing"}, {"duplicate"} or {code, ended 0|1, HGETALL of the
// record, cached result JSON or ""}.
const claimLua = libLua + `
local rk, base, id, intent, nonce = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[16]
if KEYS[2] and not redis.call('SET', KEYS[2], nonce, 'NX', 'PX', ARGV[26]) then
  -- marked before: a duplicate of a decision, unless this very call set
  -- the mark and is re-sent after a lost reply (then it goes on, and the
  -- record's nonce answers as the first run did)
  if redis.call('GET', KEYS[2]) ~= nonce then
    return {'duplicate'}
  end
end
local f = record(rk, 'h', 'k', 'K', 'ch', 'ci', 'e', 'n', 'i', 'r', 'm', 'x', 'u', 't', 'qu', 'ac', 'ai')
local state = f[1]
if not state then
  return {'missing'}
end
local sess = session(rk, f[3], f[4], f[5], f[6])
local hash = long(rk, 'h', f[2])
local pk = base .. 'pending:' .. sess
local function result(code, ended, cached)
  return {code, ended, redis.call('HGETALL', rk), cached or ''}
end
-- the result cached under the idempotency key, if its payload hash matches
local function cached()
  local idem = long(rk, 'i', f[9])
  if idem and idem ~= '' then
    local v = redis.call('GET', base .. 'idem:' .. string.len(sess) .. ':' .. sess .. ':' .. idem)
    -- (the request's hash as text, ARGV[19], is the record's: cached() is
    -- called only once the two have been found equal)
    local want = '{"hash":' .. cjson.encode(ARGV[19]) .. ','
    if v and string.sub(v, 1, string.len(want)) == want then
      return v
    end
  end
  return ''
end
-- mark is the field t of a transition: this call's nonce and its answer
local function mark(code, ended)
  return 'claim ' .. nonce .. ' ' .. code .. ' ' .. ended
end
local n, tcode, tended = string.match(f[14] or '', '^claim (%S+) (%S+) (%d)$')
if n == nonce then
  -- this very call, re-sent after a lost reply: answer as the first time
  local c = ''
  if tcode == 'claimed' and tended == '0' then
    c = cached()
  end
  return result(tcode, tonumber(tended), c)
end
-- finish ends the approval as st, answering code; more fields (field,
-- value, …) are written in the same HSET. The session pointer stays: it
-- names the session's latest approval, pending or ended (Latest).
local function finish(st, outcome, code, ...)
  setlong(rk, 's', st, 'at', ARGV[10], 'o', outcome, 't', mark(code, 1), ...)
  redis.call('PEXPIRE', rk, ARGV[15])
  redis.call('PUBLISH', ARGV[14], '{"id":"' .. id .. '","outcome":' .. outcome .. '}')
end
local nowms, nowns = tonumber(ARGV[8]), tonumber(ARGV[9])
local expms, expns = tonumber(f[7]), tonumber(f[8])
local before = nowms < expms or (nowms == expms and nowns < expns)

if intent == 'expire' then
  if state ~= 'pending' then
    return result('already_claimed', 0)
  end
  if before then
    return result('not_yet', 0)
  end
  finish('expired', ARGV[12], 'expired', 'via', 'system')
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
  finish('superseded', ARGV[13], 'superseded', 'via', 'system')
  return result('superseded', 1)
end

-- who may decide: approval.Approval.AllowsIn (libLua's allows)
local actor, requester = ARGV[5], long(rk, 'r', f[10]) or ''
local verb = 'approve'
if intent == 'reject' then
  verb = 'reject'
end
local allowed = allows(rk, actor, requester, verb, f[11], f[12], f[13], f[5], f[6], f[16], f[17], ARGV[17], ARGV[18])
if not allowed then
  return result('unauthorized', 0)
end

if ARGV[4] ~= hash then
  return result('tampered', 0)
end
if not before then
  finish('expired', ARGV[12], 'expired', 'via', 'system')
  return result('expired', 1)
end
if intent == 'reject' then
  finish('rejected', ARGV[11], 'claimed', 'by', actor, 'via', ARGV[6], 'cm', ARGV[7])
  return result('claimed', 1)
end
-- the quorum: approval.Approval.CountVote (voted_before, voted, or on to
-- the claim); votes are the fields y1, y2, … each an approval.Vote as JSON
local quorum = tonumber(f[15] or '1') or 1
if quorum > 1 then
  local nv = 0
  while true do
    local v = redis.call('HGET', rk, 'y' .. (nv + 1))
    if not v then
      break
    end
    if cjson.decode(long(rk, 'y' .. (nv + 1), v)).by == actor then
      return result('voted_before', 0)
    end
    nv = nv + 1
  end
  setlong(rk, 'y' .. (nv + 1), ARGV[25])
  if nv + 1 < quorum then
    redis.call('HSET', rk, 't', mark('voted', 0))
    return result('voted', 0)
  end
end
setlong(rk, 's', 'claimed', 'at', ARGV[10], 't', mark('claimed', 0), 'by', actor, 'via', ARGV[6], 'cm', ARGV[7])
if ARGV[20] ~= '' then
  -- a per-call decision: which calls run, recorded with the claim
  setlong(rk, 'v', ARGV[20])
end
if ARGV[21] ~= '' then
  -- an edit: the approval binds to the edited calls (field j, as Go built
  -- it, replacing every chunk of the old one) and their hash; the
  -- proposed hash is kept
  local i = 1
  while redis.call('HEXISTS', rk, 'j.' .. i) == 1 do
    redis.call('HDEL', rk, 'j.' .. i)
    i = i + 1
  end
  redis.call('HSET', rk, 'h', ARGV[21], 'ph', ARGV[23])
  setlong(rk, 'j', ARGV[22])
end
if ARGV[24] ~= '' then
  -- the approver's grant choice (once, session)
  redis.call('HSET', rk, 'gr', ARGV[24])
end
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
// Returns {"ok", channel, chat, card…} (the card references recorded by
// then, so the caller settles cards added after the claim too; a card
// stored as "=" plus its message id is in that channel and chat),
// {"missing"}, or {the state that is not claimed}.
const completeLua = libLua + `
local rk = KEYS[1]
local f = record(rk, 'h', 'k', 'K', 'ch', 'ci', 'i', 't', 'c1')
if not f[1] then
  return {'missing'}
end
local function ok()
  local res = {'ok', long(rk, 'ch', f[5]) or '', long(rk, 'ci', f[6]) or ''}
  local c, i = f[9], 1
  while c do
    res[#res + 1] = long(rk, 'c' .. i, c)
    i = i + 1
    c = redis.call('HGET', rk, 'c' .. i)
  end
  return res
end
if f[1] ~= 'claimed' then
  if f[8] == 'complete ' .. ARGV[8] then
    return ok() -- this very call, re-sent after a lost reply
  end
  return {f[1]}
end
local idem = long(rk, 'i', f[7])
if ARGV[3] == 'executed' and idem and idem ~= '' and tonumber(ARGV[5]) > 0 then
  local sess = session(rk, f[3], f[4], f[5], f[6])
  local ck = ARGV[1] .. 'idem:' .. string.len(sess) .. ':' .. sess .. ':' .. idem
  redis.call('SET', ck, '{"hash":' .. cjson.encode(hashtext(long(rk, 'h', f[2]))) .. ',"outcome":' .. ARGV[4] .. '}', 'PX', ARGV[5])
end
setlong(rk, 's', ARGV[3], 't', 'complete ' .. ARGV[8], 'o', ARGV[4])
redis.call('PEXPIRE', rk, ARGV[7])
redis.call('PUBLISH', ARGV[6], '{"id":"' .. ARGV[2] .. '","outcome":' .. ARGV[4] .. '}')
return ok()
`

// cancelLua ends a pending approval as cancelled (its session pointer
// stays, as in claimLua).
//
//	KEYS[1]  record key <prefix>{<shard>}:ap:<id>
//	ARGV[1]  id   ARGV[2] outcome (JSON)   ARGV[3] now as RFC 3339 text
//	ARGV[4]  outcome channel   ARGV[5] retention of ended records, in ms
//	ARGV[6]  nonce of this call
//	ARGV[7]  decided_via (the source of the cancellation)
//	ARGV[8]  decided_by ("" when the process cancels: not written)
//
// Returns {"missing"}, {"not_pending", HGETALL} or {"cancelled", HGETALL}.
const cancelLua = libLua + `
local rk, id = KEYS[1], ARGV[1]
local f = record(rk, 't')
if not f[1] then
  return {'missing'}
end
if f[1] ~= 'pending' then
  if f[2] == 'cancel ' .. ARGV[6] then
    -- this very call, re-sent after a lost reply
    return {'cancelled', redis.call('HGETALL', rk)}
  end
  return {'not_pending', redis.call('HGETALL', rk)}
end
setlong(rk, 's', 'cancelled', 'via', ARGV[7], 'at', ARGV[3], 't', 'cancel ' .. ARGV[6], 'o', ARGV[2])
if ARGV[8] ~= '' then
  setlong(rk, 'by', ARGV[8])
end
redis.call('PEXPIRE', rk, ARGV[5])
redis.call('PUBLISH', ARGV[4], '{"id":"' .. id .. '","outcome":' .. ARGV[2] .. '}')
return {'cancelled', redis.call('HGETALL', rk)}
`

// addCardsLua appends card references to a record as fields c<n>, n
// counting on from the last one there. A card in the approval's own channel
// and chat is stored as "=" followed by its message id, any other as its
// JSON. The nonce of the last call is kept in "q" (not "t": adding cards
// must not hide a claim's nonce from its own re-send), so a re-sent call
// does not append twice. When a decision ended the approval while its card
// was being sent, it answers with the record as it is afterwards, so that
// the caller learns it in the same round trip (and settles the new cards);
// while the approval is claimed, or pending without votes towards a
// quorum, it answers "live" (the record is not read back: the requester
// has it); a pending one with votes is read back, so the caller shows
// the votes on the new cards.
//
//	KEYS[1]  record key <prefix>{<shard>}:ap:<id>
//	ARGV[1]  nonce of this call
//	ARGV[2…] per card: channel, chat id, message id, JSON
//
// Returns nil when the record is missing, "live" (see above), else its
// HGETALL.
const addCardsLua = libLua + `
local rk = KEYS[1]
local f = record(rk, 'q', 'ch', 'ci')
if not f[1] then
  return false
end
if f[2] ~= ARGV[1] then
  local ch, ci = long(rk, 'ch', f[3]) or '', long(rk, 'ci', f[4]) or ''
  local n = 1
  while redis.call('HEXISTS', rk, 'c' .. n) == 1 do
    n = n + 1
  end
  local kv = {'q', ARGV[1]}
  for i = 2, #ARGV, 4 do
    local v = ARGV[i + 3]
    if ARGV[i] == ch and ARGV[i + 1] == ci then
      v = '=' .. ARGV[i + 2]
    end
    kv[#kv + 1] = 'c' .. n
    kv[#kv + 1] = v
    n = n + 1
  end
  setlong(rk, unpack(kv))
end
if f[1] == 'claimed' or (f[1] == 'pending' and redis.call('HEXISTS', rk, 'y1') == 0) then
  return 'live'
end
return redis.call('HGETALL', rk)
`

// pendingLua reads the session's pending approval (or, with ARGV[2]
// "any", its latest approval whatever its state) in one round trip.
//
//	KEYS[1]  pointer key <prefix>{<shard>}:pending:<session>
//	ARGV[1]  base <prefix>{<shard>}: — the record key base.."ap:"..id is
//	         built from it (same session, same shard tag, same slot)
//	ARGV[2]  "any" for Latest; absent for Pending
//
// Returns nil when there is none, else {id, the record's HGETALL}.
const pendingLua = libLua + `
local id = redis.call('GET', KEYS[1])
if not id then
  return false
end
local rk = ARGV[1] .. 'ap:' .. id
local st = record(rk)[1]
if not st or (st ~= 'pending' and ARGV[2] ~= 'any') then
  return false
end
return {id, redis.call('HGETALL', rk)}
`

// resolveLua settles a frozen approval as a person chose; it follows
// memstore's resolveLocked step by step (missing; not frozen; the approver
// rule for approving, as claimLua judges it; the payload hash; then done ->
// executed or abandon -> failed with the outcome built in Go, or retry ->
// claimed without an outcome). A record older than the retention has
// expired with its TTL: missing. The decision's fields (by, via, cm, at)
// and the outcome o are written again, so the chunks of their old values
// are deleted first (see setlong).
//
//	KEYS[1]  record key <prefix>{<shard>}:ap:<id>
//	ARGV[1]  id           ARGV[2] resolution (done, retry, abandon)
//	ARGV[3]  payload hash, encoded as the field "h" is
//	ARGV[4]  actor        ARGV[5] source      ARGV[6] comment
//	ARGV[7]  now as RFC 3339 text (decided_at)
//	ARGV[8]  the outcome of done or abandon (JSON; "" for retry)
//	ARGV[9]  outcome channel   ARGV[10] retention of records, in ms
//	ARGV[11] nonce of this call
//	ARGV[12] channel and ARGV[13] chat where the resolution was taken
//
// Returns {"missing"} or {code, ended 0|1, HGETALL of the record}.
const resolveLua = libLua + `
local rk, id, nonce = KEYS[1], ARGV[1], ARGV[11]
local f = record(rk, 'h', 'ch', 'ci', 'r', 'm', 'u', 'x', 't', 'ac', 'ai')
if not f[1] then
  return {'missing'}
end
local function result(code, ended)
  return {code, ended, redis.call('HGETALL', rk)}
end
local n, tcode, tended = string.match(f[9] or '', '^resolve (%S+) (%S+) (%d)$')
if n == nonce then
  -- this very call, re-sent after a lost reply: answer as the first time
  return result(tcode, tonumber(tended))
end
if f[1] ~= 'frozen' then
  return result('not_frozen', 0)
end
-- who may resolve: approval.Approval.AllowsIn of an approve (libLua's allows)
local actor, requester = ARGV[4], long(rk, 'r', f[5]) or ''
local allowed = allows(rk, actor, requester, 'approve', f[6], f[8], f[7], f[3], f[4], f[10], f[11], ARGV[12], ARGV[13])
if not allowed then
  return result('unauthorized', 0)
end
if ARGV[3] ~= long(rk, 'h', f[2]) then
  return result('tampered', 0)
end
for _, name in ipairs({'by', 'via', 'cm', 'o'}) do
  local i = 1
  while redis.call('HDEL', rk, name .. '.' .. i) == 1 do
    i = i + 1
  end
end
redis.call('HDEL', rk, 'o')
if ARGV[2] == 'retry' then
  setlong(rk, 's', 'claimed', 'at', ARGV[7], 't', 'resolve ' .. nonce .. ' claimed 0', 'by', actor, 'via', ARGV[5], 'cm', ARGV[6])
  redis.call('PEXPIRE', rk, ARGV[10])
  return result('claimed', 0)
end
local st = 'executed'
if ARGV[2] == 'abandon' then
  st = 'failed'
end
setlong(rk, 's', st, 'at', ARGV[7], 'o', ARGV[8], 't', 'resolve ' .. nonce .. ' claimed 1', 'by', actor, 'via', ARGV[5], 'cm', ARGV[6])
redis.call('PEXPIRE', rk, ARGV[10])
redis.call('PUBLISH', ARGV[9], '{"id":"' .. id .. '","outcome":' .. ARGV[8] .. '}')
return result('claimed', 1)
`

// stepLua takes a timed step of an approval, a reminder or an escalation
// step (see stepKind): Store.Remind or Store.Escalate has read the record
// and chosen, by the caller's clock, the step that is due; the script
// takes it only if the record is as it was read (still pending, the same
// number of steps of the kind taken) and not expired.
//
//	KEYS[1]  record key <prefix>{<shard>}:ap:<id>
//	ARGV[1]  the field that counts the steps taken (rd, ed)
//	ARGV[2]  the field of the nonce of the last call that took one (rt, et)
//	ARGV[3]  the steps taken as the record was read
//	ARGV[4]  the steps taken once this one is: a reminder counts those it
//	         passes over (a late sweep takes the latest due only)
//	ARGV[5]  now, unix ms  ARGV[6] now, ns within the ms
//	ARGV[7]  nonce of this call
//	ARGV[8…] pairs of a field written with the step and its value ("": not
//	         written); the chunks of its old value are deleted first (an
//	         escalation step: eu, the people of every step taken with this
//	         one, a JSON array; ep, the chats of those of mode chat)
//
// Returns {"missing"} or {code, HGETALL of the record}: code "taken", or
// "changed" (another call took it, or the approval is no longer pending
// or has expired: nothing changed).
const stepLua = libLua + `
local rk, nonce = KEYS[1], ARGV[7]
local f = record(rk, 'e', 'n', ARGV[1], ARGV[2])
if not f[1] then
  return {'missing'}
end
local function result(code)
  return {code, redis.call('HGETALL', rk)}
end
if f[5] == nonce then
  -- this very call, re-sent after a lost reply: answer as the first time
  return result('taken')
end
local nowms, nowns = tonumber(ARGV[5]), tonumber(ARGV[6])
local expms, expns = tonumber(f[2]), tonumber(f[3])
local before = nowms < expms or (nowms == expms and nowns < expns)
if f[1] ~= 'pending' or not before or (f[4] or '0') ~= ARGV[3] then
  return result('changed')
end
local set = {ARGV[1], ARGV[4], ARGV[2], nonce}
for j = 8, #ARGV, 2 do
  local name, v = ARGV[j], ARGV[j + 1]
  local i = 1
  while redis.call('HDEL', rk, name .. '.' .. i) == 1 do
    i = i + 1
  end
  if v ~= '' then
    set[#set + 1] = name
    set[#set + 1] = v
  end
end
setlong(rk, unpack(set))
return result('taken')
`
