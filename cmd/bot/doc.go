// Command bot is hitlbot: a chat bot whose risky tool calls wait for a
// person's 确认 / 取消.
//
//	bot                 run the server (same as bot serve)
//	bot serve           web chat at /, WebSocket at /ws, HTTP API at /agent/chat and
//	                    /api/approvals, /healthz, /readyz and /metrics
//	bot chat            chat in the terminal; approvals are "确认执行? [y/N]" prompts
//	bot check           validate the config: every problem with its YAML path (exit 1),
//	                    or the effective config with secrets as <secret> (exit 0)
//	bot doctor          probe each configured part at once, each within -timeout (5s):
//	                    Redis (PING, CONFIG GET appendonly), the model endpoint (one
//	                    chat completion offering one tool), Feishu and DingTalk (an
//	                    access token); one line per part, OK, WARN, FAIL with the
//	                    troubleshooting fix, or SKIP; exit 1 on a FAIL (doctor.go)
//	bot audit verify    check the audit trail's hash chains (exit 1 on the first break)
//	bot audit tail      print the newest audit records and follow new ones
//	bot version         print the version
//
// Flags: -config PATH (default ./config.yaml when present, else the
// embedded defaults), -listen ADDR (overrides server.listen), -data DIR
// (overrides server.data_dir). Environment variables HITLBOT_<PATH> set any
// key (see cmd/bot/internal/config); config.yaml.example at the repository root
// documents every key.
//
// With no config at all, `go run ./cmd/bot` listens on 127.0.0.1:8080 with
// the in-memory store, the rules model (no LLM), the demo SQLite database
// in ./data, the web chat and the HTTP API for one anonymous local user,
// and prints one line saying where to open the chat.
//
// # Wiring
//
// main is thin: run parses the command, config.Check loads and validates,
// and newCore builds the parts in the order they need each other — the
// store (memory or Redis), the audit log (a file in the data directory,
// and the Redis stream), the tools (each wrapped for metrics), the model,
// the policy (held in an atomic pointer), the history and session locker,
// then, by channels.Assemble (the one constructor the channels' tests use
// too), the relay (the router's face, made before the router), the engine
// (whose notifier is the relay, wrapped for metrics), the agent loop (whose
// speaker is the relay) and the router, which decides with the engine,
// submits to the loop and takes the relay. The numbered steps are on core in serve.go. serve adds the
// web and API channels, the HTTP server and the config watcher; chat adds
// the terminal channel.
//
// # Reload
//
// SIGHUP, or a change of the config file, reads the config again. If it
// has any problem, nothing changes and the log says why. Otherwise the
// approval policy (approval.policy, approval.timeout) is swapped
// atomically: turns use it from their next tool call, and a pending
// approval keeps the approvers and expiry it was created with. Other
// sections — tools included, because the agent loop holds its tool
// registry for its lifetime — are logged as needing a restart.
//
// # Shutdown
//
// SIGINT or SIGTERM: the listener closes and requests in flight get
// server.shutdown_timeout; the channels close (typed decisions in flight
// finish), the agent's turns end, the audit trail is flushed. Pending
// approvals stay in the store: with Redis they can be decided after a
// restart, and the decision still runs the tool exactly once.
package main
