// Package audit keeps an append-only, hash-chained trail of what happened
// to approvals: who asked for which call, who confirmed or rejected it,
// what ran and how it ended.
//
// # Records and chains
//
// A Record names an Event, the approval, and sanitised detail: the session,
// the tool name, the payload hash, the actor, the source of a decision, the
// outcome status and an error text. It never carries a tool's arguments,
// only PayloadSHA256, because arguments may hold secrets and the trail is
// kept long and read widely. For the same reason callers must sanitise the
// error text they pass: the audit stores it as given.
//
// Every process that appends is a writer with its own chain: Log.Append
// numbers its records 1, 2, 3… (Seq), links each to the one before (Prev is
// the previous record's Hash) and seals it (Hash is the sha256 of the
// record's canonical encoding, see Record.ComputeHash). Chains are per
// writer because several replicas append to one Redis stream at once: a
// single global chain would need every append to read the global head and
// write the next one atomically, which means a Lua script, and Redis Lua
// has no sha256 (only sha1hex), so the hash would have to be computed
// outside and retried on conflict — a round trip and a retry loop on the
// decision path of every approval. Per-writer chains need no coordination:
// each process links its own records under a mutex and the stream simply
// interleaves them. A writer name is hostname-pid-random, so a restarted
// process begins a new chain rather than continuing an old one.
//
// # Writing
//
// A Log writes its records, in batches and without holding up Append, to
// one or more sinks: FileSink (JSON lines), RedisSink (a stream bounded by
// MAXLEN ~) and MemorySink (tests and `bot chat`). A failed write is logged
// and retried with backoff while the process lives; when a sink stays down
// the bounded queue fills and further records are refused (TryAppend says
// so; Append never blocks), and the engine runs no tool whose record was
// refused or not yet written. Records queued when the process dies (or when
// Close gives up) are lost: Flush before acknowledging anything that needs
// its record to be durable.
//
// # Verifying
//
// Verify reads records as a sink returns them and checks every writer's
// chain: hashes recompute, Seq goes up by one, Prev links to the previous
// Hash. It reports the first break — an edited field, a deleted record, a
// reordered pair, a forged hash — as a *Break. The oldest record of each
// writer in the input is taken as its anchor, so a stream whose oldest
// entries were trimmed still verifies.
//
// What Verify cannot see:
//
//   - Truncation of a writer's newest records: a chain cut short after its
//     last surviving record looks like a chain that simply ended. Only an
//     external anchor shows it — the writer's Head (seq and hash) logged or
//     exported elsewhere, or a second sink to compare with.
//   - Removal of a whole writer's records, or of a stream's oldest records
//     (indistinguishable from trimming).
//   - A rewrite: the chain is not keyed, so whoever can write the sink can
//     edit a record and recompute every hash after it. The chain proves
//     integrity relative to an anchor kept out of that person's reach, not
//     on its own.
//
// Exact repeats of a record (same writer, seq and hash), which a retried
// write can leave, are accepted; Dedupe drops them for counting.
package audit
