// Package hitltest is the one test rig of hitlbot's agent and channel
// tests: a counting tool, a scripted model, a no-op auditor and a builder
// of the real parts (a store, an approval engine, an agent loop) with the
// router in front of them, assembled by channels.Assemble as `bot serve`
// assembles them (New's Config.Assemble).
//
// It imports agent and approval only (never channels), so that the
// channels package's own tests can use it as well as the channel
// packages' tests; the test hands it the call of channels.Assemble.
// Nothing outside tests imports it.
package hitltest
