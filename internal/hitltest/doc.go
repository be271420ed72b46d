// Package hitltest is the one test rig of hitlbot's agent and channel
// tests: a counting tool, a scripted model, a no-op auditor and the real
// stack (a store, the registry of channels, the presenter, an approval
// engine, an agent loop and the router), built by channels.Assemble, the
// constructor `bot serve` builds its stack with (New). A test varies the
// stack through Config; it registers its channels (Stack.Register) and
// starts the router (Stack.Start).
//
// It imports channels, so the channels package's own tests that use it
// are an external test package (channels_test). Nothing outside tests
// imports it.
package hitltest
