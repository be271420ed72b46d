// Package model holds the agent's models: OpenAI, a client of any
// OpenAI-compatible chat-completions endpoint, and Rules, the
// deterministic model used when no language model is configured, which
// still reaches every tool (MCP tools too) through "/call <tool> <json>"
// and lists them with their risk through "/tools". Both implement
// agent.Model; the vocabulary they speak (Message, Request,
// Response, ToolSpec, ModelError) is package agent's, and agent never
// imports this package.
package model
