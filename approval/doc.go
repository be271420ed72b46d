// Package approval is the human-in-the-loop core of hitlbot: it decides
// whether a tool call must wait for a person, records the request, takes
// the person's decision through one atomic claim, runs the tool exactly
// once, and keeps an audit trail of all of it.
//
// The parts:
//
//   - Approval, Call, Decision, Outcome, State and Status are the record and
//     its vocabulary (one vocabulary for store, audit, cards, API, metrics).
//   - PayloadHash and Canonicalize fix what a person approves: the sha256 of
//     the tool name and the canonical JSON of its arguments. Buttons carry
//     the hash; a decision for another payload is "tampered".
//   - Policy turns a call's effect, confidence and the session's grants into a
//     Verdict: run now, or ask whom, for how long, and why.
//   - Who may decide an approval and who may see it is one rule, stated
//     whole in mayapprove.go: Approval.AllowsIn and Approval.MaySee. The
//     stores judge it inside their claim (redisstore mirrors it in Lua),
//     and storetest holds both stores to it, clause by clause.
//   - ReplyParser reads typed answers (确认 / 取消) without ever taking a
//     negation for a confirmation.
//   - Store keeps approvals; memstore serves one process, redisstore many
//     replicas. Both pass storetest. Every transition is one atomic step
//     (on Redis, one Lua script in one hash slot).
//   - Engine ties them together. Request persists, audits and shows the
//     card. Decide authorises and claims in one step, runs the tool on the
//     decision path (not in the waiting goroutine), caches and records the
//     result, publishes it and settles every card. Wait blocks on a Go
//     channel per approval until the outcome arrives from any replica, or
//     expires the approval through the same claim gate.
//
// Fail closed: no tool runs without a successful claim. If the store cannot
// be reached, Decide returns an error of kind errkind.Unavailable and nothing
// runs; a tool whose effect is unknown (a panic, an error after it started,
// a result that could not be recorded) freezes its approval, which is never
// re-run by itself.
package approval
