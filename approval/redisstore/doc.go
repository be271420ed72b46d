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
//	<prefix>{<shard>}:ap:<id>                         HASH  the record (below)
//	<prefix>{<shard>}:pending:<session>               STRING the session's latest approval id (pending or ended)
//	<prefix>{<shard>}:idem:<len(session)>:<session>:<key>  STRING cached result {"hash":…,"outcome":…}
//	<prefix>due                                       ZSET  expiry index: id scored by ExpiresAt (unix ms); an approval that ended leaves it with the next pipeline of the Store that saw it end (endedQueue)
//	<prefix>esc                                       ZSET  escalation index: id scored by its next step's time
//	                                                  (unix ms), added in Put's pipeline, moved or removed by Escalate
//	<prefix>remind                                    ZSET  reminder index: id scored by its next reminder's
//	                                                  time (unix ms), added in Put's pipeline, moved or removed by Remind
//	<prefix>seen:<key>                                STRING de-duplication mark (SET NX PX GET; value: the
//	                                                  nonce of the call that set it)
//	<prefix>{<shard>}:seen:<key>                      STRING a decision's de-duplication mark (a click's
//	                                                  event key) set by the claim script itself
//	                                                  (approval.ClaimRequest.Mark; value: the claim's nonce)
//	<prefix>{<shard>}:grant:<GrantID(key)>           STRING a session grant's JSON (PX its window)
//	<prefix>{<shard>}:grants:<session>               ZSET  the session's grants, scored by expiry
//	<prefix>chat:<len(channel)>:<channel>:<chat>     ZSET  a chat's approvals by ExpiresAt (ChatPending),
//	                                                  added and read back in Put's pipeline; an approval
//	                                                  that leaves pending is removed by the next pipeline
//	                                                  the same Store sends (see Chat indexes); an
//	                                                  approval with an approvers' chat is listed there
//	<prefix>outcomes                                  pub/sub channel: {"id":…,"outcome":{…}}
//
// # The record
//
// The record is a HASH whose every value is at most 64 bytes, Redis's
// default hash-max-listpack-value, so that Redis keeps it as a listpack (one
// compact allocation) rather than a hashtable (a dictionary entry and two
// strings per field, three to four times the memory). A value that would be
// longer is split: field f holds its first 64 bytes, f.1, f.2, … the next 64
// each (a value of exactly 64 bytes has no f.1; one longer than 16 KB is
// kept whole, and that record is a hashtable). The Go side splits what Put
// writes, the scripts' setlong what they write, and both join on reading.
// Field names are short, and what can be derived is not stored:
//
//	s        state
//	h        payload hash: "h" and the 32 bytes of a lowercase hex SHA-256,
//	         or "=" and any other text as given (the claim compares this form)
//	ch, ci   channel and chat id (absent when empty)
//	ac, ai   the approvers' chat (approval.Approval.ApproveIn): channel
//	         and chat id, absent when the approval has none; the claim
//	         and resolve scripts read them (the approver rule "chat");
//	         ad "1" when the cards go 1:1 to the listed people (Direct:
//	         ai is then empty)
//	k        session, when it does not begin with <ch>:<ci>; else K, what
//	         follows that (absent when nothing: the per-chat session scope)
//	e, n     ExpiresAt as unix milliseconds and the nanoseconds within that
//	         millisecond, which scripts compare
//	r        requester          i   idempotency key (absent when empty)
//	m        approver mode, absent for "requester"
//	u        approver users (JSON array)    x  "1": not the requester
//	qu       the approver rule's quorum, absent when one approval decides
//	ed       how many steps of its timed escalation were taken (absent: none);
//	         the steps themselves never change and are in j
//	eu, ep   the people of the escalation steps taken (JSON array of user
//	         ids) and the chats of those of mode chat (JSON array of
//	         "<channel>\n<chat id>"), absent when none; the claim and
//	         resolve scripts read them when the approval's own rule refuses
//	et       nonce of the last step script that took an escalation step
//	         (see Lost replies)
//	rd, rt   how many of its reminders are behind it (absent: none; the
//	         reminders themselves never change and are in j as rm), and
//	         the nonce of the last step script that took one
//	y1, y2…  votes towards the quorum (approval.Vote as JSON), in order,
//	         each written once by the claim that counted it
//	j        JSON of what never changes and no script reads: the calls
//	         (each call's payload hash only when it is not the hash of its
//	         tool and arguments), risk, summary, preview, reason (in English
//	         and Chinese), grant window, CreatedAt as its distance from
//	         ExpiresAt, time zones, the steps of its timed escalation, the
//	         privacy rule (pv) and whether the chat is a group (gp): the
//	         router reads them, no script does
//	c1, c2…  cards: "=" and the message id for a card in the approval's own
//	         channel and chat (nearly every card), else the JSON array
//	         [channel, chat id, message id], with "p" fourth for a card
//	         shown only to the people who may see a private approval
//	         (approval.CardRef.Private); Put writes the cards it is given,
//	         AddCards appends
//	t, q     nonce and answer of the last transition, nonce of the last
//	         AddCards (see Lost replies)
//	v        a per-call decision's verdicts (approval.Verdicts), written by
//	         the claim that approved some calls and rejected others
//	ph       the proposed payload hash (encoded as h), written by a claim
//	         that approved edited calls: it rewrites h and j with the
//	         edited calls
//	by, at, via, cm, o   once decided (again by a resolution of a frozen
//	         approval, which deletes their chunks first): actor, decided_at (RFC 3339), source,
//	         comment, outcome (approval.Outcome's JSON as Go built it:
//	         status, content, detail — what content says beyond its status
//	         sentence, absent when nothing —, is_error, results, decided_by,
//	         decided_via; the same JSON is cached and published). detail
//	         repeats the tail of content so that no reader parses content:
//	         nothing for an executed outcome, a cause or a comment else
//
// The id is the key's. Get is one HGETALL and decodes it in Go. Scripts
// never re-encode a JSON document (Redis's cjson turns an empty array into
// {}); they store and publish the JSON built in Go.
//
// # Why the ids carry a shard
//
// Every state transition is one Lua script, so it is atomic and one round
// trip. On Redis Cluster a script may only touch keys of one hash slot. Claim
// is given only an id, yet must also check the session's pending pointer and
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
//	Put       1  put: HSETNX guard on s (an existing id is errkind.Conflict),
//	             fields, TTL, pointer; the pointer's previous approval, if
//	             still pending, becomes superseded and is published and
//	             returned; pipelined with the ZADD of the expiry index, the
//	             ZADD of the chat's index and its read-back (ZRANGE, for
//	             ChatCode), and the queued removals of ended entries
//	ChatCode  0  after this Store's Put of the approval when the chat's
//	             index held it alone; 1 (the records, pipelined) when it
//	             held others; without a Put to go by, 1 more for the index
//	Claim     1  claim: the decision's de-duplication mark first, when
//	             given (SET NX PX in the record's slot; set before by
//	             another call: "duplicate", nothing changes); then
//	             memstore's claimLocked step by step (expire intent;
//	             not pending; stale pointer; who may decide, the Lua
//	             allows of approval/mayapprove.go; payload hash;
//	             expiry against ClaimRequest.Now; reject or approve), the
//	             three possible ending outcomes precomputed in Go; an approve
//	             returns the cached result of the session's idempotency key
//	             when its payload hash matches
//	Complete  1  complete: claimed -> executed | failed | frozen, caches an
//	             executed outcome (SET PX), publishes; pipelined with the
//	             queued removals of ended chat-index entries (its own,
//	             queued by its claim, among them)
//	Resolve   1  resolve: memstore's resolveLocked step by step (not frozen;
//	             who may decide (allows); payload hash; done/abandon end it with the
//	             outcome built in Go and publish, retry claims it again);
//	             the decision's fields and the outcome are rewritten, their
//	             old chunks deleted first; a retry is preceded by the ZADD
//	             that puts it back in the expiry index (and followed by
//	             WAIT with ReplicaAcks)
//	Cancel    1  cancel      AddCards 1  addCards      Pending 1  pending
//	Latest    1  pending (with "any": whatever the record's state)
//	Get       1  HGETALL     Seen     1  SET NX PX GET
//	SeenAndPending 1  the SET NX PX GET of each key and the pending script,
//	             pipelined (with the queued chat-index removals)
//	ForgetClaimMark 1  DEL    Forget   1  DEL
//	PutGrant, Grants, Revoke 1 script each (the grant's slot: its session's)
//	GrantFor  1  GET
//	Due       1  ZRANGEBYSCORE           Undue    1  ZREM
//	Escalations 1  ZRANGEBYSCORE of esc
//	Escalate  3  takeStep (step.go): HGETALL, judged in Go; the step
//	             script (the step is taken only if ed is still what Go
//	             read); the esc and chat index updates pipelined (a step
//	             that is not due: 2, HGETALL and the ZADD)
//	Reminders 1  ZRANGEBYSCORE of remind
//	Remind    3  takeStep as Escalate: the step script with rd; the
//	             remind index update (not due: 2)
//
// A turn of agent mode that asks and is approved on another replica costs
// 7 round trips in all (bot bench -mode agent counts them, and -v names
// each): 5 for the approval — the inbound message's marks and pending
// lookup (SeenAndPending), Put (the code of its card included), AddCards
// (the card's reference, known only once the platform has the card), the
// click's claim with its mark, Complete — and 2 for the continuation's
// claim (Seen of resume:<id>, approval.Engine.ClaimResume): the waiting
// turn's, which wins, and the losing one of the resumption that the
// deciding replica queues because no Wait of its own took the outcome (it
// claims under the session's lock, after the waiting turn's end). Approved
// on the replica that waits, the turn costs 6 (no resumption is queued);
// resumed on the deciding replica after its waiter is gone, the decision
// and the continuation cost 3 (claim, Complete, the resumption's claim,
// which wins: bot bench -mode resume). None of them repeats a read:
// nothing re-reads what a script returned.
//
// Those are calls, each waiting for its reply before the next. On the
// wire they cost fewer round trips when conversations run at once: on a
// single server or a Sentinel master the single commands and scripts go
// through go-redis's auto-pipeliner (Options.NoAutoPipeline turns it
// off), which sends the commands that callers issue at the same moment in
// one write and reads their replies in one read. At -c 100, bot bench
// -mode agent counts about 3.1 round trips a conversation for its 7 calls
// (the pipelines Put and SeenAndPending send are not batched with
// others). A batch whose connection is cut loses every reply in it; each
// command is sent again and answers as its first run did (the nonces
// above: TestLostRepliesUnderLoad). A Cluster client is not batched.
//
// Scripts are loaded lazily: go-redis's Script.Run sends EVALSHA and falls
// back to EVAL when the server does not know the script yet (first use, or
// after a restart), so those counts hold from the second call of each script
// on a server.
//
// # Chat indexes
//
// A chat's index lists the approvals pending there, for ChatPending (the
// chat's /pending and typed codes) and ChatCode (the code on a card). Put
// adds to it and reads it back in its own pipeline, and keeps what it read
// for the ChatCode of that approval that follows it (chatHints, bounded);
// an approval alone in its chat then has its code with no round trip. An
// approval that leaves pending through this Store (a claim that claimed or
// ended it, Cancel, a Put that superseded it), and any ended entry a read
// of the index finds, is queued (endedQueue, bounded) and removed (ZREM)
// by the next pipeline this Store sends (Put, Complete, SeenAndPending):
// so a chat's index holds its pending approvals and few others, whatever
// the chat's history, and costs no round trip of its own. An entry that
// escapes (the queue full, a pipeline failed, the replica gone, or an
// approval whose index entry outlived its record) is pruned when the index
// is read, as well as every entry whose approval expired longer than the
// retention ago.
//
// # Lost replies
//
// go-redis re-sends a command whose connection broke before the reply came
// (EOF, reset, read timeout; MaxRetries, default 3), although the script may
// have run. Every call carries a nonce unique to it (a claim's
// de-duplication mark holds it too, so a re-sent claim is not taken for a
// duplicate of itself); each transition records
// its nonce and answer on the record, and a re-sent call that finds its own
// nonce gets the first run's answer (a claim that won stays won, a Put is not
// a conflict with itself, cards are not added twice). A mark of Seen or
// SeenAndPending holds its call's nonce, and its SET NX GET answers what
// the key held: nothing, or that nonce (a re-sent SET whose first run set
// it), is first, so a resume claim that won never hears that it lost (its
// turn would have nobody to go on) and an inbound message is not dropped
// as a duplicate of itself. (SET with both NX and GET needs Redis 7.0 or
// later.) Without MaxRetries a
// lost reply is an error of kind errkind.Unavailable, and a claim may then be
// left claimed with nobody to run it (never run twice).
//
// # Memory
//
// One pending approval costs 0.8–0.9 KB in Redis in all, by used_memory:
// its record as a listpack of 250–500 bytes plus its key (about 380 B for
// bot bench's approval by MEMORY USAGE, 440 B with agent mode's card), the
// session pointer (about 140 B), the expiry-index entry (about 150 B), and
// the TTL entries and dictionary slots of the two keys. Once it has ended,
// its record is kept for the retention, and its session's pointer until a
// newer approval replaces it or its TTL ends (one pointer per session, not
// per approval).
// BenchmarkPendingMemory measures 810 B for bot bench's approval, 865 B with
// its card and 1.2 KB for the conformance suite's larger approval (longer
// summary, preview, reason, arguments, approver list); bot bench -pending
// reads 850–890 B in engine mode (its used_memory also moves with client
// buffers and dictionary rehashing). (Before it was a listpack, when it kept
// the approval's JSON whole with long field names, the record was a
// hashtable and the same approvals took 2.0, 2.2 and 2.4 KB.) Raising
// hash-max-listpack-value changes nothing (every value is short).
//
// # TTLs
//
// A pending record and its pointer expire (Redis TTL) after
// (ExpiresAt - Options.Clock.Now() at Put) + Retention. When the approval
// ends (executed, failed, frozen, rejected, expired, superseded, cancelled)
// the record's TTL becomes Retention (default 7 days), so a late click gets
// already_decided or expired, not missing. The session pointer stays when
// its approval ends (until its own TTL, or until a newer approval replaces
// it), so Latest finds the session's last approval and how it ended (a
// late typed 确认 is answered "expired" as a late click is); Pending reads
// the record's state and answers nil for an ended one. (Versions before
// Latest deleted the pointer at the end; a pointer missing so only makes
// Latest answer nil.) Whether an approval has expired is
// decided by the caller's clock (ClaimRequest.Now), never by Redis TTLs or
// the store's clock. De-duplication marks, grants and cached results expire
// by their own TTLs (millisecond precision, rounded up).
//
// # Failing closed
//
// Every Redis or network error (redis.Nil, a normal "no such key", aside)
// becomes an *approval.Error of kind errkind.Unavailable wrapping
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
