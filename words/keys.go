package words

// Key names one sentence of the catalogue. A key's comment says its
// arguments, in order, when it has any; every language's sentence takes
// the same ones.
type Key int

// Outcome texts: the sentence of each outcome status (approval.Status).
// approval.outcome_text in the config overrides them.
const (
	// none is the zero Key, which names no sentence.
	none Key = iota

	OutcomeExecuted
	OutcomeReplayed
	OutcomeRejected
	OutcomeTampered
	OutcomeAlreadyDecided
	OutcomeSuperseded
	OutcomeFrozen
	OutcomeExpired
	OutcomeMissing
	OutcomeFailed
	OutcomeUnauthorized
	OutcomeCancelled
	OutcomeAwaitingQuorum

	// Why an approval froze: said after the frozen outcome's sentence. The
	// tool's own error is never among them (it may hold a secret).
	FrozenError       // the tool stopped with an error of unknown effect
	FrozenTimeout     // the engine's time limit ended the run; args: the limit
	FrozenToolTimeout // the tool's own time limit ended it
	FrozenCrashed     // the tool panicked
	FrozenNotRecorded // it ended but its result could not be stored
	FrozenStale       // the replica running it stopped; args: approver, when approved, the bound
	FrozenEarlier     // not run after an earlier call of unknown effect

	// Why an approved call was not run, or an approval cancelled by the
	// engine: said after the outcome's sentence.
	NotRunUnreplicated // the claim did not reach the store's replicas in time
	NotRunNoAudit      // the audit trail could not record the approval
	NotRunToolChanged  // the tool's definition changed after the card; args: the tool
	CancelNotShown     // the approval's card could not be shown

	// Errors as a chat user reads them (approval.UserMessageIn), by kind.
	ErrNotFound
	ErrPermission
	ErrConflict
	ErrExpired
	ErrUnavailable
	// ErrApproversUnreachable: the card could not be sent to the
	// approvers' chat (approve_in), so the request failed.
	ErrApproversUnreachable
	// ErrNoPrivateView: a private approval nobody who may see it can be
	// shown privately on the platform, so the request failed.
	ErrNoPrivateView
	ErrInvalid
	ErrOther

	// Why the policy asks (or does not): the reason on a card and a record.
	ReasonOff           // approvals are turned off
	ReasonNever         // the tool is configured never to ask
	ReasonAlways        // the tool is configured always to ask
	ReasonHigh          // args: the effect's name (EffectRead …)
	ReasonLowRead       // a LOW read
	ReasonLowConfidence // args: the confidence, the threshold (%.2f)
	ReasonLow           // LOW risk
	ReasonStrict        // MEDIUM in strict mode
	ReasonGranted       // a live grant of the session
	ReasonGrantable     // args: the grant window ("5m")
	ReasonMedium        // MEDIUM risk
	ReasonRows          // args: rows affected, the limit
	ReasonRowsAtMost    // args: rows it may affect, the limit
	ReasonSep           // joins two reasons

	// Where an MCP tool's effect (and so its risk) came from: said after
	// the policy's reason. args: the server's name.
	MCPRiskReadOnly       // a trusted server's readOnlyHint: true
	MCPRiskNotDestructive // a trusted server's destructiveHint: false
	MCPRiskDestructive    // a trusted server's tool that may destroy (destructiveHint true or absent)
	MCPRiskUntrusted      // an untrusted server: its annotations count for nothing

	// gate: what a person reads of another agent's call on its card
	// (gate.Preview).
	GateLines       // how long a file is; args: its number of lines (not 1)
	GateOneLine     // a file of one line
	GateMoreLines   // the lines a preview leaves out; args: how many (not 1)
	GateOneMoreLine // one line left out
	GateDescription // the description the agent gave a command; args: it
	GateReplaceAll  // an edit that replaces every occurrence of its text
	GateNoInput     // a call without input
	GateNotJSON     // a call whose input is not JSON (it is not shown)

	// Another agent's request (package gate).
	GateAsks          // a card's summary; args: the agent, the call's summary ("Bash: rm -rf build")
	GateRiskPattern   // where its risk came from; args: the agent, the pattern
	GateRiskNoPattern // no pattern matched; args: the agent
	GateAllowed       // a card's final status when allowed; args: the agent

	// The names of effects, inside ReasonHigh.
	EffectRead
	EffectWrite
	EffectDestructive

	// Why tools/sql makes a statement HIGH: a reason on a card.
	SQLDeleteRows
	SQLDeleteAll
	SQLDropsForGood // args: the verb
	SQLTruncate
	SQLReplace
	SQLInsertOrReplace
	SQLUpdateOrReplace
	SQLUpdateAll
	SQLAlterDrop
	SQLCreateOrReplace
	SQLRunsCode      // args: the verb
	SQLContains      // args: the keyword
	SQLSchema        // args: the verb
	SQLPrivileges    // args: the verb
	SQLWholeTables   // args: the verb
	SQLDryRunTimeout // args: the time limit

	// Card labels and lines (cards: Markdown, text, Feishu, DingTalk).
	CardTitle      // the title of a pending card
	CardTool       // label
	CardBatchOf    // after the tool's name; args: how many calls
	CardReason     // label
	CardRequester  // label
	CardApprovers  // label
	CardExpires    // label
	CardHash       // label of the payload's short hash
	CardDecidedBy  // label
	CardComment    // label
	CardResult     // label of a final card's result
	CardDetails    // label of why a frozen card froze
	CardHowMD      // how to answer, in Markdown
	CardHowText    // how to answer, in plain text
	CardConfirm    // the approve button
	CardCancel     // the reject button
	CardProcessing // a card while its decision runs
	CardWaiting    // a DingTalk card's status while it waits
	CardHowFeishu  // how to answer a Feishu card
	CardHowGroup   // how to answer a DingTalk card in a group, in Markdown
	CardHowDirect  // how to answer a DingTalk card in a direct chat, in Markdown
	// CardWaitsIn is the one line of a requester's status card while the
	// approval waits in another chat (approve_in): %s is where
	// (ApproveInChat).
	CardWaitsIn
	// ApproveInChat names the approvers' chat (approve_in) in a sentence.
	ApproveInChat
	// ApproveInDirect names, in the same sentence, the 1:1 chats of the
	// listed approvers (approve_in direct).
	ApproveInDirect

	// The placeholder of a Feishu card's reason field (the form input
	// whose text is the decision's comment).
	CardReasonInput

	// Who may approve (approval.ApproverRule.DescribeIn): on a card, in a
	// refusal, after an unauthorized outcome.
	ApproversChat         // anyone in the chat may
	ApproversTheirChat    // anyone in the approvers' chat may (approve_in), said in the requester's chat
	ApproversUsers        // args: the user ids, joined by ApproversSep
	ApproversRequester    // only the requester may
	ApproversNotRequester // said after ApproversChat or ApproversUsers when the requester may not
	ApproversSep          // joins two user ids
	ApproversAside        // after a sentence, in brackets; args: who may approve
	ApproversQuorum       // said after who may approve when several must; args: how many

	// A quorum (approval.ApproverRule.Quorum): its progress on a card and
	// in an awaiting_quorum outcome, and what it refuses.
	QuorumProgress    // args: approvals so far, the quorum, who approved (joined by ApproversSep)
	QuorumVotedBefore // an approver's second approve; args: QuorumProgress
	QuorumNoEdit      // an edit or a per-call decision of an approval that needs several approvers
	QuorumUnreachable // a request whose rule leaves too few people to reach the quorum; args: the quorum

	// A timed escalation (approval.Escalation): the line on every card of
	// an escalated approval and the notice in its chat, and its failure.
	EscalatedLine     // args: how long nobody decided (Span), the chats also asked, who may decide too
	EscalationFailed  // the escalation chat could not be reached; args: how long (Span), the chat
	ApproversAnyoneIn // anyone deciding in one chat may (a step of mode chat); args: the chat id
	ApproversAlso     // said after who may approve once an escalation added people; args: who (EscalatedWhoIn)

	// A reminder of a pending approval (approval.Notifier.Remind): its
	// code and who asked, never what a private approval would run.
	ReminderLine // args: the code, who asked, until when (a time of day), who may approve
	ReminderWhat // what it would do, after ReminderLine (not for a private approval); args: the summary
	ReminderMore // after the people a reminder mentions, how many more there are; args: the number

	// The router's notices.
	RouterWaiting     // an approval waits; args: what it is
	RouterCalls       // what a batch is; args: tool, number of calls
	RouterBusy        // the session's queue is full
	RouterClosing     // the process is stopping
	RouterMayApprove  // after a refusal; args: who may approve
	RouterRefused     // the sender is not on the allow-list
	RouterDecided     // joins "already decided" and what came of it; args: both
	RouterUnavailable // a message not taken: its de-duplication mark could not be set

	// The agent's notices about a turn.
	AgentMaxRounds // args: the number of rounds
	AgentTooLong
	AgentStillWaiting // also kept in the conversation
	AgentShuttingDown
	AgentUnavailable
	AgentBusy
	AgentStillWorking
	AgentNotRun        // prefix of a call's result when it was not run
	AgentResumeGone    // fmt: the approval's status; the turn it answered is no longer in the history
	AgentNoHistory     // the conversation's history could not be loaded
	AgentEffectUnknown // a tool that ran at once failed with an unknown effect
	AgentNoPreview     // a card's preview when the tool could not make one; args: the tool's error

	// Why the language model gave no answer (agent.ModelError).
	ModelTimeout
	ModelAuth
	ModelRateLimited
	ModelFailed

	// The rules model's answers to /call and /tools (agent/model.Rules).
	// Nothing is called when one of the /call sentences is said.
	RulesCallUsage     // how to write /call, with an example
	RulesCallBadJSON   // args: the tool, the character (from 1) near which the JSON goes wrong
	RulesCallUnclosed  // the JSON ends before its value does; args: the tool
	RulesCallNotObject // args: the tool
	RulesCallTrailing  // args: the tool, the text after the object (%q)
	RulesCallNoTool    // the tool is not offered here; args: the tool
	RulesCallClose     // tools with a close name; args: the names, joined by ", "
	RulesToolsHeader   // the first line of /tools; args: how many tools
	RulesToolsNone     // /tools when no tool is offered
	RulesToolsHowTo    // the last line of /tools

	// The web channel's error frames.
	WebInvalidStep
	WebAlreadyDecided
	WebExpired
	WebUnavailable
	WebBadUTF8
	WebTypeEventDiffer

	// The Feishu channel's replies to a click.
	FeishuUnavailable
	FeishuMalformed
	FeishuFailed
	FeishuMayApprove  // args: who may
	FeishuSomeoneElse // who may, when the approval does not say

	// The terminal chat.
	CLIConfirm // the approval prompt
	CLIBye
	CLIInterruptRejects // Ctrl+C at the approval prompt
	CLITurnGoesOn       // Ctrl+C while a turn runs
	CLINoAnswerYet
	CLIInterruptedAgain // a second Ctrl+C while the chat is busy ends the process

	// The greeting `bot chat` prints before its first prompt (the example
	// requests themselves are commands, the same in every language).
	GreetIntro     // what the bot does
	GreetDemo      // the heading of the examples that work with the demo database
	GreetListTasks // what the example "list tasks" does
	GreetQuery     // what the example read-only SQL query does
	GreetDelete    // what the example DELETE does: it asks first

	// The HTTP API's messages (channels/api): the message of an error
	// body and the words the API writes into an answer itself. The
	// machine-readable parts (error codes, statuses, field names) are not
	// words and never change with the language.
	APIBodyTooLarge // args: the expected object's shape
	APIBodyUnreadable
	APIBodyBadUTF8
	APIBodySurrogate
	APIBodyNotObject // args: the expected object's shape
	APIBodyMalformed // args: the expected object's shape
	APIBodyFieldType // args: the expected object's shape, the field
	APIBodyEmpty     // args: the expected object's shape
	APIBodyTrailing
	APIMethodNotAllowed // args: the method, the methods the route takes
	APIAuthMissing
	APIAuthMalformed
	APIAuthUnknown
	APINotRunning
	APINoPendingAction
	APIMessageEmpty
	APIMessageBadUTF8
	APIConfirmedNoToken // confirmed without a confirmationToken
	APIConversationID   // a malformed conversationId
	APIBusy             // 429: the conversation's queue is full
	APIShuttingDown     // 503: the router is stopping
	APITooManyPending   // 429: the per-user cap
	APIConfirmNeeded    // the text of an answer that waits; args: the action's description
	APIStillWorking     // the text of an incomplete answer
	APIStateFilter      // a malformed ?state=
	APIAuditUnavailable
	APIOnlyRequester // a cancel by another than the requester
	APINoApproval
	APIApprovalExpired
	APINotPending        // args: the approval's state or outcome status
	APIConfirmedRequired // confirmationToken without confirmed
	APIUnknownToken
	APIUnknownOrUsed
	APIActionExpiredAt // args: the expiry (RFC 3339)
	APIActionExpired
	APIActionDecided  // args: the approval's state or outcome status
	APITokenAndTokens // both confirmationToken and confirmationTokens
	APIBatchConfirmed // confirmationTokens without confirmed
	APIBatchEmpty
	APIBatchTooMany // args: the tokens sent, the most allowed
	APIBatchTwice   // a token listed twice
	APIBatchDecided // args: how many were decided, how many were sent
	APIDecisionVerb // decision is neither approve nor reject
	APIHashRequired // approve without payloadSha256
	APIExpiredAt    // args: the expiry (RFC 3339)
	APIExpiredNotRun
	APITampered
	APIFamilyMismatch // args: who may decide
	APIForbiddenOwn   // args: who may decide
	APIUserMismatch   // args: who may decide

	// In-doubt resolution of a frozen approval (issue 16 item 4).
	CardResolveDone        // the 已完成 button of a frozen card
	CardResolveRetry       // the 重试 button
	CardResolveAbandon     // the 放弃 button
	CardResolveHow         // what the three buttons of a frozen card do
	CardResolveInput       // the placeholder of a frozen Feishu card's result input
	ResolvedDone           // a card's status: recorded as done by hand
	ResolvedAbandon        // a card's status: abandoned
	ResolvedRetry          // a card's status after a retry; args: the retry's status sentence
	OutcomeResolvedDone    // an outcome's sentence; args: who recorded it
	OutcomeResolvedAbandon // a failed outcome's detail; args: who abandoned it
	APIResolution          // resolution is not done, retry or abandon
	APINotFrozen           // a resolution of an approval that is not frozen; args: its state
	APIResolutionOnly      // a resolution with approve or reject
	APIHashRequiredResolve // resolve without payloadSha256
	CLIResolvePrompt       // bot chat's prompt on a frozen approval
	// Grants you can see and approval commands in chat (issue 16 items 5
	// and 6: branch i16-grants).
	GrantAutoApproved // a call a live grant let run; args: who approved, when (an Ago* sentence)
	AgoJustNow
	AgoMinute
	AgoMinutes // args: minutes
	AgoHour
	AgoHours // args: hours

	// Spans of time (Span): a timeout, an escalation's wait.
	SpanSeconds // args: seconds
	SpanMinutes // args: minutes
	SpanHours   // args: hours
	CmdHelp     // the commands, one a line
	CmdGrantsNone
	CmdGrantsHead
	CmdGrantLine // args: number, tool, payload summary, who approved, remaining time
	CmdRevokeUsage
	CmdRevokeNoSuch // args: the number typed, how many grants there are
	CmdRevoked      // args: how many
	// CmdGrantLinePrivate is /grants' line of a grant a private approval
	// gave, for readers who may not see that approval; args: number, the
	// grantee, who approved, remaining time.
	CmdGrantLinePrivate
	CmdRevokeDenied // /revoke <n> of a grant the sender may not revoke; args: the number
	CmdRevokeLeft   // after /revoke all: the grants of others it left; args: how many
	CmdPendingNone
	CmdPendingHead
	CmdPendingHeadQuestion // /pending's head when a question waits among them
	CmdPendingLine         // args: code, summary, requester, remaining time
	CmdCancelUsage
	CmdNoSuchCode      // args: the code typed
	CmdAmbiguous       // a bare 确认 / 取消 while several wait; args: the list of codes
	CmdCancelDenied    // args: who may decide
	CmdCancelled       // args: code
	CmdUnavailable     // the store could not answer a command
	APIGrant           // grant is neither once nor session
	CardApproveOnce    // the approve button that grants nothing (仅本次)
	CardApproveSession // the approve button that grants the session the window (本会话允许); args: the window
	CardCode           // label of the approval's short code
	CardHowGrantFeishu // how to answer a Feishu card with two approve buttons; args: the window
	CLIGrantPrompt     // the approval prompt of a MEDIUM call that may grant; args: the window
	APIGrantNone       // grant session for an approval that grants nothing
	// Per-call decisions in a batch (issue 16 item 3, branch i16-edit).
	APICallsApproveOnly  // calls sent with a decision other than approve
	APICallsInvalid      // calls does not name every call once with approve or reject
	CardCallChoice       // the per-call choice's label on a batch card; args: the call's number, its tool
	CardCallRun          // the choice that runs the call
	CardCallSkip         // the choice that does not run the call
	CardPerCallHint      // a batch card's hint: pick per call, then confirm
	CardPerCallElsewhere // a batch card with no per-call choice (DingTalk): where to decide per call
	CardCallsDeclined    // a settled batch card: which calls were declined; args: their numbers
	CardMoreCalls        // a batch card too large to list every call: how many more; args: the number

	// Edit before approve (issue 16 item 2, branch i16-edit).
	APIEditArguments  // decision edit without arguments of the right shape
	APIEditInvalid    // the engine refused the edited arguments; args: why
	APIEditNeedsOther // the edit makes the call need another approver; args: who may
	CardEditButton    // the Feishu card's button that approves the edited arguments
	CardEditInput     // the label of a call's arguments input; args: the call's number, its tool
	CardEditElsewhere // a card with no arguments input (secret-looking or too long arguments): where to edit
	CardEdited        // a settled card: what an approver changed before approving; args: the call's number, what changed
	// The approval as a person sees it (issue 18): tools/sql's previews,
	// and what a tool's call does, written for its approver (About…).
	SQLRows           // args: a number of rows (not 1)
	SQLRow            // one row
	SQLPreview        // args: the statement, what it does
	SQLPreviewNote    // args: the statement, what it does, how that was found
	SQLReadOnly       // args: the statement, the database
	SQLAffects        // args: the rows (SQLRows), the database
	SQLAffectsAtMost  // args: the rows (SQLRows), the table, the database
	SQLWouldRun       // args: the SQL verb, the database
	SQLWouldDrop      // args: the table (SQLTableRows), the database
	SQLWouldDropMany  // args: the tables, the database
	SQLWouldEmpty     // args: the table (SQLTableRows), the database
	SQLWouldEmptyMany // args: the tables, the database
	SQLTableRows      // args: the table, its rows (SQLRows)
	SQLTableUncounted // args: the table, the database's error
	SQLListSep        // between tables of a list
	SQLRadiusUnknown  // args: the database
	SQLNoteTimeout    // args: the dry run's timeout
	SQLNoteNotDryRun  // args: why (the database's words)
	SQLNoteMySQLDDL
	SQLNoteProcedure
	SQLNoteRolledBack
	AboutSQLQuery   // what sql_query does, for its approver
	AboutSQLExecute // what sql_execute does, for its approver
	AboutShell      // what the shell tool does, for its approver
	AboutTaskCreate
	AboutTaskList
	AboutTaskComplete
	AboutTaskDelete
	AboutForeign // args: the tool, what it says it does (its own words)

	// Cards as a person sees them (issue 18): what the call does, the risk in words.
	CardAbout // label: what the call does, for its approver
	CardRisk  // label: the risk and why
	CardRiskHigh
	CardRiskMedium
	CardRiskLow

	// The web chat page (issue 18): its labels and messages, said by the page in the configured language. Placeholders in braces are filled in by the page.
	WebPageConnecting
	WebPageOnline
	WebPageOffline // {s}: seconds until the next try (the page fills it in)
	WebPageNoConnect
	WebPageSession // {id}: the session id
	WebPageUser    // {user}: the user
	WebPageInput
	WebPageInputBlocked
	WebPageSend
	WebPageMessage // the input's label
	WebPagePendingTitle
	WebPageNonePending
	WebPagePendingToggle // {n}: how many wait
	WebPageLog           // the conversation's label
	WebPageWhat
	WebPageRequested // {who}: the requester; {until}: the expiry time; {left}: the time left
	WebPageExpired
	WebPageDetails
	WebPageArgs
	WebPageComment
	WebPageApprove
	WebPageReject
	WebPageKeys
	WebPageKeysHigh
	WebPageHashHint       // under the payload hash on the dialog: what it is
	WebPageApprovers      // the header link to the approvers' page (?session=ops)
	WebPageApproversTitle // its tooltip: what the page is, and how to open another session
	WebPageRunning
	WebPageCancelling
	WebPageNotConnected
	WebPageNeedsConfirm // {what}: the call's summary
	WebPageOutcome      // {status}: how it ended
	WebPageOutcomeBy    // {status}: how it ended; {who}: who decided
	WebPageResultOf     // {tool}: the tool
	WebPageFailedOf     // {tool}: the tool
	WebPageTry          // the greeting's example buttons' label
	WebPageYou          // screen readers: who wrote a message
	WebPageBot
	WebPageOnce           // the dialog's approve button that grants nothing (仅本次)
	WebPageCalls          // the dialog's per-call choices' legend
	WebPageEdit           // the dialog's fold that edits the arguments
	WebPageEditArgs       // the arguments input's label
	WebPageEditApprove    // the button that approves the edited arguments
	WebPageApproveSession // the approve button that grants the session; {window}: the grant window (the page fills it in)
	WebPageEditNotObject  // the edited arguments are not a JSON object

	// A pending card's requester and expiry (issue 18).
	CardRequestedUntil // args: who asked, the expiry time

	// The demo task tools' previews (issue 18).
	TaskPreviewCreate    // args: the title
	TaskPreviewCreateDue // args: the title, the due date
	TaskPreviewListAll
	TaskPreviewListOpen
	TaskPreviewComplete        // args: the task (id and title)
	TaskPreviewCompleteDone    // args: the task (id and title)
	TaskPreviewCompleteMissing // args: the id, twice
	TaskPreviewDelete          // args: the task (id and title)
	TaskPreviewDeleteMissing   // args: the id, twice

	// What another agent's call is, for its approver (issue 18).
	AboutGate // args: the agent

	// Privacy in groups (issue 17): what onlookers of a private approval
	// see, and where its words went instead.
	RedactedPending  // args: the requester, the risk in words, who may approve
	RedactedFinal    // args: the requester, the risk in words, how it ended
	RedactedDecided  // args: how it ended, who decided
	PrivateAnswer    // args: the requester
	PrivateResult    // args: who decided
	PrivateUnsent    // the private answer could not be sent; args: the requester
	PrivateCommandAt // a private approval's code and line in /pending; args: the code, the redacted line

	// DingTalk's platform rules (issue 25, branch c25d).
	DingTalkValueCut          // ends a card value cut to DingTalk's 1 KB per value: where the whole text is
	DingTalkExternalRequester // an approval of an external member: decided by replying, not by the card's buttons

	// Claude Code's permission hook (issue 28).
	GateHookGaveUp  // why a hook request's approval was withdrawn (its cards, a late click); args: how long the hook waited (Span)
	GateHookContext // where a hook request comes from, on its card; args: the program (Claude Code, Codex), its session (short), the working directory

	// Questions (issue 28 item 3): an agent's AskUserQuestion on a card.
	QuestionAsks       // a question card's summary; args: the agent, its first question
	QuestionTitle      // a question card's title
	QuestionMulti      // after a multi-select question: any number of options may be chosen
	QuestionHow        // how to answer a question card (Feishu, web)
	QuestionAnswer     // the answer button
	QuestionDecline    // the button that declines to answer
	QuestionChoose     // a select's placeholder; args: the question's number
	QuestionOther      // the free-text input's placeholder; args: the question's number
	QuestionAnswered   // a question card's final status when answered; args: the agent
	QuestionAnswerLine // an answer on a final card; args: the question, the answer
	QuestionElsewhere  // a typed 确认 of a question: how to answer it instead
	QuestionCLIPrompt  // bot chat's prompt for one question; args: its number
	QuestionCLIAskAll  // bot chat: before the questions, how to decline
	QuestionEmpty      // the web page: Answer pressed with nothing chosen or typed
	QuestionOwn        // the web page: the free-text input's placeholder
	// Typed answers (the answer command "回答 <code> …", DingTalk's card
	// inputs; approval.ParseAnswers).
	QuestionTypedOne      // how to answer one question by typing; args: the command with its code ("回答 ab12")
	QuestionTypedMany     // how to answer several questions by typing; args: the command with its code
	QuestionTypedGroup    // before QuestionTyped* in a DingTalk group: mention the bot
	QuestionCardInput     // a DingTalk card's answer input's hint; args: the question's number
	QuestionCardHow       // a DingTalk question card's status line: how to answer on it
	QuestionBadOption     // args: the question's number, its options' count, the number typed
	QuestionOneOption     // args: the question's number
	QuestionNoSuchQ       // args: the number typed, the questions' count
	QuestionNeedsLines    // several questions answered without "<n>:" lines; args: the command with its code
	QuestionTwice         // args: the question's number
	QuestionTooLong       // args: the question's number, the most characters
	QuestionNothing       // an answer command that answers nothing; args: the command with its code
	QuestionNotQuestion   // an answer command naming an approval that is no question; args: its code
	QuestionAmbiguous     // several questions wait and the answer names none; args: their lines
	QuestionNoSuchCode    // an answer command whose code names nothing waiting in the chat; args: the code
	QuestionTypedAnswered // a typed answer taken; args: the agent, the answers (one line each)
	// An MCP server's elicitation asked as a question (approval/elicit.go).
	ElicitAsks       // the card's summary; args: the server, its message
	ElicitAbout      // what an elicitation's card is, for its approver; args: the server
	ElicitRequired   // a required field left unanswered; args: the field
	ElicitNotNumber  // args: the field, the answer
	ElicitNotInteger // args: the field, the answer
	ElicitTooSmall   // args: the field, the minimum
	ElicitTooLarge   // args: the field, the maximum
	ElicitTooShort   // args: the field, the fewest characters
	ElicitTooLong    // args: the field, the most characters
	ElicitNotOption  // args: the field, the answer
	ElicitNotBoolean // args: the field, the answer
	ElicitBadFormat  // args: the field, the format (email, uri, date, date-time)
	ElicitItems      // a multi-select's count of choices out of bounds; args: the field, fewest, most
	ElicitDefault    // after a question whose empty answer takes a default; args: the default as shown
	// The rules model's summary of a turn's tool results (agent/model.Rules).
	RulesRejected   // args: the tool
	RulesExpired    // args: the tool
	RulesCancelled  // args: the tool
	RulesSuperseded // args: the tool
	RulesPending    // args: the tool
	RulesFinished   // a tool that said nothing; args: the tool
	RulesFailed     // an approved call that failed; args: the tool, its result
	RulesFrozen     // an approved call of unknown effect; args: the tool
	RulesTheTool    // the name of a tool whose name is not known
	RulesNothing    // no result to report
	RulesNotOffered // the message meant a tool that is not offered; args: the tool

	// What the built-in tools say back (a person reads it on the card and
	// in the chat; the model reads it too), in the call's language
	// (words.WithLang).
	SQLDone           // args: the statement's verb, the database
	SQLDoneRows       // args: the verb, the database, the rows (SQLRows)
	SQLFailed         // nothing was changed; args: the verb, the database, the database's error
	SQLFailedRollback // MySQL: rolled back; args: the verb, the database, the database's error
	SQLNoConnect      // args: the database, the error
	SQLNoTransaction  // args: the database, the error
	SQLQueryFailed    // args: the database, the error
	SQLResultRows     // the last line of a result table; args: the number of rows (not 1)
	SQLResultRow      // the last line of a one-row table
	SQLResultMore     // args: the rows shown
	SQLNoColumns      // a result without columns
	SQLTimedOut       // args: the limit
	SQLNoWritableDB
	SQLNoDB
	SQLUnknownDB  // args: the name (%q), the databases
	SQLReadOnlyDB // args: the name (%q)
	SQLEmpty
	SQLQueryRefused // args: why
	SQLDryRunFailed // no preview: the dry run failed; args: the database, its error
	SQLNotRead      // why sql_query refuses a statement that is no read
	SQLExecuteRead
	SQLExecuteRefused // args: why
	HTTPNotSent       // the request was not sent; args: why
	HTTPRedirect      // after "HTTP 302": redirects are not followed
	HTTPLocation      // args: the Location header
	HTTPCut           // args: the limit in bytes
	HTTPReadFailed    // args: why
	HTTPTimedOut      // args: the limit
	ShellNotRun       // args: why
	ShellExit         // args: the exit status
	ShellTerminated   // args: how (the process state)
	ShellCut          // args: the limit, the whole size, in bytes
	ShellNoOutput
	ShellMissing   // a parameter is missing; args: the parameter
	ShellNotScalar // args: the parameter
	ShellNUL       // args: the parameter
	ShellDash      // args: the parameter, the value (quoted)

	// numKeys counts the keys; it is not one.
	// Standing rules for other agents (issue 28 item 2, branch always).
	CardApproveAlways // the approve choice that allows an agent a standing rule; args: the rule (Bash(npm test:*)), the agent
	CardHowAlways     // how to answer a card offering a standing rule, added to how to answer it; args: the rule, the agent
	CLIAlwaysPrompt   // bot chat's approval prompt of a card offering a standing rule; args: the rule, the agent
	CmdGrantLineRule  // a standing rule in /grants; args: number, the rule, the agent, who allowed it, remaining time
	numKeys
)

// Keys returns every key of the catalogue.
func Keys() []Key {
	ks := make([]Key, 0, numKeys-1)
	for k := none + 1; k < numKeys; k++ {
		ks = append(ks, k)
	}
	return ks
}

// Valid reports that k names a sentence of the catalogue (the zero Key
// names none).
func (k Key) Valid() bool { return none < k && k < numKeys }
