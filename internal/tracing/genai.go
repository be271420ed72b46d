package tracing

import "go.opentelemetry.io/otel/attribute"

// The attribute names of the GenAI semantic conventions hitlbot's spans
// carry (gen-ai-spans: invoke_agent, execute_tool), and hitlbot's own.
const (
	OperationName  = attribute.Key("gen_ai.operation.name")
	ToolName       = attribute.Key("gen_ai.tool.name")
	ToolCallID     = attribute.Key("gen_ai.tool.call.id")
	ToolType       = attribute.Key("gen_ai.tool.type")
	AgentName      = attribute.Key("gen_ai.agent.name")
	ConversationID = attribute.Key("gen_ai.conversation.id")
	ProviderName   = attribute.Key("gen_ai.provider.name")
	ErrorType      = attribute.Key("error.type")

	ApprovalID     = attribute.Key("hitlbot.approval.id")
	ApprovalRisk   = attribute.Key("hitlbot.approval.risk")
	ApprovalStatus = attribute.Key("hitlbot.approval.status")
	PayloadSHA256  = attribute.Key("hitlbot.payload_sha256")
	Channel        = attribute.Key("hitlbot.channel")
	Source         = attribute.Key("hitlbot.decision.source")
	Verb           = attribute.Key("hitlbot.decision.verb")
	Cards          = attribute.Key("hitlbot.cards")
	Claim          = attribute.Key("hitlbot.claim")
)

// The values of gen_ai.operation.name hitlbot uses.
const (
	OpInvokeAgent = "invoke_agent"
	OpExecuteTool = "execute_tool"
)

// ExecuteTool is the name of a tool call's span: "execute_tool {tool}".
func ExecuteTool(tool string) string { return OpExecuteTool + " " + tool }
