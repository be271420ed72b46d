// Package redisstore is the approval.Store on Redis, for several replicas
// that share approvals, de-duplication marks, grants and outcomes. It has
// exactly the semantics of the in-process memstore (both pass
// approval/storetest) and runs unchanged on a single server, behind
// Sentinel, or on Redis Cluster: it takes any go-redis UniversalClient
// (NewClient builds one from a ClientConfig).
//
// # Keys
//
// Every key starts with the prefix (default "hitl:"). The keys of one
// approval, of its session's pending pointer and of its session's result
// cache carry the hash tag {<shard>}, where shard = approval.Shard(session),
// the first 8 hex digits of the session's SHA-256, which approval.NewID also
// puts into the id ("ap_<shard>_<32 hex>"):
//
//	<prefix>{<shard>}:ap:<id>                         HASH  the record
//	<prefix>{<shard>}:pending:<session>               STRING the session's pending approval id
//	<prefix>{<shard>}:idem:<len(session)>:<session>:<key>  STRING cached result {"hash":…,"outcome":…}
//	<prefix>seen:<key>                                STRING de-duplication mark (SET NX PX)
//	<prefix>grant:<key>                               STRING session grant (SET PX, EXISTS)
//	<prefix>outcomes                                  pub/sub channel: {"id":…,"outcome":{…}}
//
// The record is a HASH. Field "rec" holds the JSON of the approval as it was
// put and never changes. The other fields are what scripts read or change:
// "state", "hash" (payload SHA-256), "session", "exp" and "expns" (ExpiresAt
// as unix milliseconds and the nanoseconds within that millisecond), "idem"
// (idempotency key), "req", "amode", "anr", "ausers", "chat" (requester and
// approver rule, and for the rule "chat" the approval's channel and chat,
// for the authorisation check inside the claim), and, once decided,
// "by", "at" (RFC 3339), "via", "comment", "outcome" (JSON), and "ncards" with
// "card:1"… (Put writes the cards an approval is put with, AddCards appends; the record stays out of "rec"); "tok" and "ctok" hold the nonce of the last
// transition and of the last AddCards (see Lost replies). Get is one HGETALL:
// decode rec, then overlay the mutable fields. Scripts never re-encode a JSON document (Redis's cjson
// turns an empty array into {}); they store and publish the JSON built in Go.
//
// # Why the ids carry a shard
//
// Every state transition is one Lua script, so it is atomic and one round
// trip. On Redis Cluster a script may only touch keys of one hash slot. Claim
// is given only an id, yet must also clear the session's pending pointer and
// read the session's result cache; Put must supersede the session's previous
// approval, whose id it learns only from the pointer. Because the id carries
// the session's shard, the script can build all those keys itself, with the
// same hash tag: base "<prefix>{<shard>}:" + "pending:<session>", + "ap:<old
// id>" (the old approval belongs to the same session, so it has the same
// shard), + "idem:…". Redis 7 in cluster mode refuses a script that touches
// two slots; the tests run every script on a cluster node and also check the
// slots of all these keys with CRC16 in Go. The prefix may not contain '{' or
// '}' (New refuses it), which would move the hash tag.
//
// # Scripts and round trips
//
//	Put       1  put: HSETNX guard (an existing id is KindConflict), fields,
//	             TTL, pointer; the pointer's previous approval, if still
//	             pending, becomes superseded and is published and returned
//	Claim     1  claim: memstore's claimLocked step by step (expire intent;
//	             not pending; stale pointer; approver rule; payload hash;
//	             expiry against ClaimRequest.Now; reject or approve), the
//	             three possible ending outcomes precomputed in Go; an approve
//	             returns the cached result of the session's idempotency key
//	             when its payload hash matches
//	Complete  1  complete: claimed -> executed | failed | frozen, caches an
//	             executed outcome (SET PX), publishes
//	Cancel    1  cancel      AddCards 1  addCards      Pending 1  pending
//	Get       1  HGETALL     Seen     1  SET NX PX     Grant, HasGrant 1
//
// Scripts are loaded lazily: go-redis's Script.Run sends EVALSHA and falls
// back to EVAL when the server does not know the script yet (first use, or
// after a restart), so those counts hold from the second call of each script
// on a server.
//
// # Lost replies
//
// go-redis re-sends a command whose connection broke before the reply came
// (EOF, reset, read timeout; MaxRetries, default 3), although the script may
// have run. Every call carries a nonce unique to it; each transition records
// its nonce and answer on the record, and a re-sent call that finds its own
// nonce gets the first run's answer (a claim that won stays won, a Put is not
// a conflict with itself, cards are not added twice). Without MaxRetries a
// lost reply is an error of kind KindUnavailable, and a claim may then be
// left claimed with nobody to run it (never run twice).
//
// # Memory
//
// One pending approval costs about 2 KB (BenchmarkPendingMemory: record
// ~1.8 KB as a hashtable, pointer ~150 B, with the conformance suite's
// approval). The record's "rec" field is longer than Redis's default
// hash-max-listpack-value (64), so the HASH is a hashtable; raising that
// setting to 2048 makes it a listpack and saves about a fifth.
//
// # TTLs
//
// A pending record and its pointer expire (Redis TTL) after
// (ExpiresAt - Options.Clock.Now() at Put) + Retention. When the approval
// ends (executed, failed, frozen, rejected, expired, superseded, cancelled)
// the record's TTL becomes Retention (default 7 days), so a late click gets
// already_decided or expired, not missing. Whether an approval has expired is
// decided by the caller's clock (ClaimRequest.Now), never by Redis TTLs or
// the store's clock. De-duplication marks, grants and cached results expire
// by their own TTLs (millisecond precision, rounded up).
//
// # Failing closed
//
// Every Redis or network error (redis.Nil, a normal "no such key", aside)
// becomes an *approval.Error of kind KindUnavailable wrapping
// approval.ErrUnavailable and the cause. A Claim that cannot reach Redis
// returns such an error, never a claim, so nothing runs; a Seen that cannot
// reach Redis returns an error rather than guessing. Errors never contain a
// password or a URL (go-redis's own errors name at most a host:port).
//
// # Outcomes
//
// Scripts PUBLISH each ended approval's outcome on <prefix>outcomes in the
// same atomic step as the transition. Subscribe opens one pub/sub
// connection, returns once Redis confirmed the subscription, and calls fn
// from one goroutine until its context ends; go-redis re-subscribes after a
// reconnect (outcomes published meanwhile are lost: waiters fall back to
// their timeout and the record). PUBLISH reaches every node of a Cluster.
package redisstore
