// Package mcptool makes the tools of MCP servers hitlbot tools: every call
// goes through the same policy, card, claim, exactly-once execution and
// audit as a built-in tool.
//
//	tools:
//	  mcp:
//	    servers:
//	      - name: fs
//	        command: npx
//	        args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/share"]
//	        trusted: false
//
// # Sessions
//
// Start connects to every configured server in parallel (stdio: a child
// process that sees only PATH, HOME and the variables listed in env, its
// stderr logged, never shown to the model; streamable HTTP: headers whose
// values come from environment variables), each bounded by its
// start_timeout, and returns; a server that fails is retried in the
// background with backoff (1s doubling to 1m, with jitter) until Close.
// Both protocol revisions the SDK speaks work: 2026-07-28 and the legacy
// initialize handshake (2025-11-25 and older).
//
// A server's tools are offered while its session is up: OnChange hands
// them over (agent.Registry.Offer) when it comes up and on every
// tools/list_changed, and withdraws them (nil) when the session ends. A
// call to a withdrawn tool then fails as unknown tool, and nothing is
// sent.
//
// # Tools
//
// A tool is offered as <server>__<tool> when that name fits model APIs
// (^[a-zA-Z0-9_-]{1,64}$), the tools allow/deny globs let it through,
// and its input schema resolves; anything else is logged and skipped
// (Probe says why). Its effect comes from its annotations only when the
// server is trusted (readOnlyHint → read/LOW, destructiveHint: false →
// write/MEDIUM, otherwise destructive/HIGH); an untrusted server's tools
// are destructive whatever they claim; EffectSource tells the card which.
//
// Every tool is an agent.Foreign: its Definition is the sha256 of the
// canonical JSON of what the server said of it (server, name, title,
// description, input schema, annotations), its secrets hidden. A new listing makes new tool
// objects, so a call hashed for a card before a change is refused by the
// registry after it (approval.ErrToolChanged) and never reaches the server.
//
// # Outcomes
//
// Text content is given as it is; structured content as compact JSON when
// no text block already holds it; images, audio and resources as a short
// note ("[image image/png, 1234 bytes]"); the whole is cut at 64 KiB. A
// result with isError is an Output with IsError. A server that is down,
// or a connection the SDK already knew to be closing, means nothing was
// sent: approval.ErrNotRun. A timeout (call_timeout) cancels the call (the
// SDK sends notifications/cancelled) and, like any failure after the
// request was handed to the connection, is a plain error: the effect is
// unknown, the approval freezes, and the call is never re-sent.
//
// # Elicitation
//
// With Options.Elicit set, every session declares form elicitation; a
// server's request while one of its tools runs is asked in that call's
// context (approval.Origin, its deadline), see elicit.go. No call, or
// several on a legacy revision, or URL mode: declined.
//
// # Secrets
//
// The values of a server's env variables and header variables are scrubbed
// from results, errors, statuses and logged stderr; previews show the
// arguments only. An env value that is an ordinary word is scrubbed too
// (values shorter than 4 bytes are not). A tool's definition is scrubbed
// when the list is read (title, description, annotations' title, every
// string of its schemas, keys included), before its digest is taken, and
// a tool whose name holds a secret is refused (a Refusal).
//
// # Names that meet
//
// Server a's tool b__c and server a__b's tool c are both a__b__c: the
// server listed first has the name (its last listing counts while it is
// down), and OnChange's caller refuses a name a built-in tool has
// (agent.Registry.Offer). Only that name is refused; ServerStatus.Refused
// says it, Ready fails for a required server, Warnings say it otherwise.
package mcptool
