package model

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/words"
)

// RulesConfig is the YAML section model.rules: the deterministic model used
// when no language model is configured. With no patterns it understands the
// built-in commands (see Rules).
type RulesConfig struct {
	// Patterns are extra commands. They are tried in order, after /call
	// and /tools and before the other built-in rules, against the last user message (trimmed of
	// surrounding space); the first that matches and whose arguments
	// expand wins.
	Patterns []RulePattern `json:"patterns" mapstructure:"patterns"`
}

// RulePattern maps a message that matches Regexp to one call of Tool.
//
// Example (YAML, under model.rules):
//
//	patterns:
//	  - name: deploy
//	    regexp: '(?i)^deploy (?P<service>[a-z-]+) to (?P<env>staging|prod)(?: with (?P<n>\d+) replicas)?$'
//	    tool: deploy
//	    args: {service: '${service}', env: '${env}', replicas: '${n:int}'}
//	    confidence: 0.9
type RulePattern struct {
	// Name identifies the pattern in errors and in the help text.
	Name string `json:"name" mapstructure:"name"`
	// Regexp is an RE2 regular expression (Go syntax), matched anywhere in
	// the message unless anchored with ^ and $; use (?i) for case
	// folding. Named groups (?P<name>…) feed Args.
	Regexp string `json:"regexp" mapstructure:"regexp"`
	// Tool is the name of the tool to call.
	Tool string `json:"tool" mapstructure:"tool"`
	// Args are the call's arguments: each value is a template in which
	// ${name} (or ${1}) is replaced by that group's text and $$ is a
	// literal $. The value is a JSON string, except when the template is a
	// single ${group:int}, ${group:number} or ${group:bool}, which makes a
	// JSON number or boolean (a group that does not convert makes the
	// pattern not match). An argument that expands to the empty string is
	// left out, so optional groups make optional arguments. A reference to
	// a group the regexp does not have is an error of NewRules.
	Args map[string]string `json:"args" mapstructure:"args"`
	// Confidence is the call's confidence, in (0, 1]; 0 means 1. The
	// built-in multipliers (question mark, short title…) do not apply.
	Confidence float64 `json:"confidence" mapstructure:"confidence"`
}

// Rules is a deterministic Model: it recognises a few phrases in the last
// user message and needs no configuration or network. It is safe for
// concurrent use.
//
// Two built-in commands reach every tool; they are tried first, before
// the configured patterns, so that no pattern can shadow them:
//
//   - "/call <tool> <arguments>" (also /调用): one call of tool, offered
//     in the request, with the arguments as written; confidence 1. The
//     arguments are one JSON object with nothing after it; none at all is
//     {}; they may start on the next line. The loop validates them against
//     the tool's schema and the policy decides as for any call. Anything
//     else (not valid JSON, not an object, text after the object) is
//     answered with what is wrong and the usage, and calls nothing; so is
//     a tool that is not offered, with up to five offered tools of a close
//     name. When the arguments are not valid JSON as written, full-width
//     punctuation outside their strings (：，｛｝…) is folded to ASCII and
//     they are tried once more.
//   - "/tools" (also /工具): every offered tool, sorted by name, one a
//     line: its name, its risk and the policy's reason for a call with
//     empty arguments (from RulesDeps.Risk; left out without it), and the
//     first sentence of its description.
//
// Their answers are in Chinese when the message has a Han character, in
// English otherwise; the command word and the tool's name may be typed in
// full-width letters (／ｔｏｏｌｓ).
//
// The other built-in rules, tried after the configured patterns, first
// match wins:
//
//   - "/sql <statement>": sql_query with {"statement"} when the tools say
//     it takes the statement as a read and sql_execute does not take it,
//     otherwise sql_execute (which asks a person first, and refuses what
//     it will not run); confidence 1. The rules model holds no SQL of its
//     own: it asks the tools (see CallChecker). With no tools to ask, every
//     statement goes to sql_execute.
//   - "list tasks", "show tasks", "show my tasks", "my tasks", "tasks",
//     "what are my tasks", 任务列表, 查看任务, 我的任务: task_list {};
//     confidence 1.
//   - "complete task N" (also finish/close task N, "mark task N as done",
//     "task N done"), 完成任务 N: task_complete {"id": N}; "delete task N"
//     (also remove task N), 删除任务 N: task_delete {"id": N}; confidence 1,
//     0.5 with a question mark. "please", "can you", "I need to", "I want
//     to", 请, 帮我… before these commands, and "please" or "thanks" after
//     any command, are ignored. An id that is 0 or does not fit 64 bits
//     is not understood.
//   - task_create {"title", "due"?} from "create a task: X" (also "add a
//     task X", "new task: X") and 创建任务：X / 创建任务:X / 创建任务 X (also
//     新建任务, 添加任务) 0.95; "task: X" (also "todo: X") 0.90; "remind: X",
//     "remind me to X", "remind me about X", 提醒我X 0.85; "I need to X"
//     0.75; an implicit mention of tasks 0.65: "add X to my tasks" (also
//     put/save … on the task list / todo list), "add X as a task",
//     把X加到任务里. Other mentions of "task" (e.g. "I have a task for
//     you") are not guessed at: they get the help text.
//
// The task_create confidence is multiplied by 0.8 when the title carries an
// uncertain time (sometime, some time, someday, some day, soon, later,
// eventually, at some point, one day, one of these days, whenever, next
// week, next month, this week, this month, in a while, 以后, 有空, 改天,
// 过几天, 下周, 下个月, 回头, 某天, 哪天, 找时间); such words stay in the
// title and set no due date. It is multiplied by 0.7 when the title has
// fewer than 5 characters (runes, so 买牛奶 counts 3) and by 0.5 when the
// message contains a question mark (? or ？). A clear date at the start or
// the end of the title (today, tonight, tomorrow, [next|this] <weekday>,
// YYYY-MM-DD [HH:MM], optionally after by/on/at/due/before/for; 今天, 明天,
// 后天, 今晚, 下周一…) is moved to "due" as written (lower-cased); the
// tasks tool resolves it. Full-width letters, digits and punctuation are
// folded to ASCII before matching (so ：and ？ work like : and ?).
//
// Anything else gets a help text listing what is understood, in English
// and Chinese. A call is emitted only when its tool is among the request's
// tools; otherwise the answer says that the tool is not available. The
// call's id is "rules-1".
//
// When the last message is a tool result, the answer is a short text that
// reports the results of this turn (the tool messages since the last user
// message), saying plainly when a call was rejected, expired, cancelled or
// superseded (or is still waiting for approval), so that the loop ends. It
// knows that from the tool message's Status, which the loop sets; it never
// reads the reply's words for it. Other results are quoted, shortened to
// 1500 characters.
type Rules struct {
	patterns []rulePattern
	tools    CallChecker                                             // nil: nothing to ask
	risk     func(tool string) (approval.Risk, approval.Words, bool) // nil: /tools shows no risk
}

// RulesDeps is what the rules model may ask about the tools. Both may be
// nil.
type RulesDeps struct {
	// Tools is asked which tool a "/sql" command is for; nil sends every
	// statement to sql_execute.
	Tools CallChecker
	// Risk says a tool's risk and the policy's reason (both languages)
	// for a call with empty arguments, for "/tools"; ok is false when it
	// cannot say. *agent.Registry's Risk, with the policy in force, is
	// one. Nil leaves the risk out of "/tools".
	Risk func(tool string) (risk approval.Risk, why approval.Words, ok bool)
}

// CallChecker answers, without running anything, whether a tool would take
// a call and what kind of call it is; *agent.Registry is one (see
// agent.Registry.Check). The rules model asks it which tool a "/sql"
// command is for.
type CallChecker interface {
	Check(tool string, args json.RawMessage) (approval.Effect, error)
}

type rulePattern struct {
	name       string
	re         *regexp.Regexp
	tool       string
	args       []ruleArg // sorted by key
	confidence float64
}

type ruleArg struct {
	key   string
	parts []tmplPart
	typ   string // "", "int", "number", "bool"
}

// tmplPart is a literal (group < 0) or a group reference.
type tmplPart struct {
	lit   string
	group int
}

// NewRules compiles cfg; deps says what the model may ask about the tools
// (see RulesDeps). A pattern with a bad regexp, no tool, a confidence
// outside [0, 1] or a template naming an unknown group is an error that
// names the pattern.
func NewRules(cfg RulesConfig, deps RulesDeps) (*Rules, error) {
	m := &Rules{tools: deps.Tools, risk: deps.Risk}
	for i, p := range cfg.Patterns {
		label := fmt.Sprintf("model.rules.patterns[%d]", i)
		if p.Name != "" {
			label = fmt.Sprintf("model.rules pattern %q", p.Name)
		}
		if p.Regexp == "" {
			return nil, fmt.Errorf("%s: regexp is empty", label)
		}
		re, err := regexp.Compile(p.Regexp)
		if err != nil {
			return nil, fmt.Errorf("%s: bad regexp: %v", label, err)
		}
		if strings.TrimSpace(p.Tool) == "" {
			return nil, fmt.Errorf("%s: tool is empty", label)
		}
		c := p.Confidence
		if math.IsNaN(c) || c < 0 || c > 1 {
			return nil, fmt.Errorf("%s: confidence %v is outside [0, 1]", label, c)
		}
		if c == 0 {
			c = 1
		}
		rp := rulePattern{name: p.Name, re: re, tool: p.Tool, confidence: c}
		keys := make([]string, 0, len(p.Args))
		for k := range p.Args {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			a, err := parseTemplate(re, p.Args[k])
			if err != nil {
				return nil, fmt.Errorf("%s: args.%s: %v", label, k, err)
			}
			a.key = k
			rp.args = append(rp.args, a)
		}
		m.patterns = append(m.patterns, rp)
	}
	return m, nil
}

// parseTemplate parses one argument template against re's groups.
func parseTemplate(re *regexp.Regexp, tmpl string) (ruleArg, error) {
	var a ruleArg
	names := re.SubexpNames()
	lit := func(s string) {
		if s == "" {
			return
		}
		if n := len(a.parts); n > 0 && a.parts[n-1].group < 0 {
			a.parts[n-1].lit += s
			return
		}
		a.parts = append(a.parts, tmplPart{lit: s, group: -1})
	}
	for rest := tmpl; rest != ""; {
		i := strings.IndexByte(rest, '$')
		if i < 0 {
			lit(rest)
			break
		}
		lit(rest[:i])
		rest = rest[i:]
		switch {
		case strings.HasPrefix(rest, "$$"):
			lit("$")
			rest = rest[2:]
		case strings.HasPrefix(rest, "${"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return a, fmt.Errorf("unclosed ${ in %q", tmpl)
			}
			ref, typ, _ := strings.Cut(rest[2:end], ":")
			switch typ {
			case "", "string":
				typ = ""
			case "int", "number", "bool":
				if len(a.parts) != 0 || end+1 != len(rest) {
					return a, fmt.Errorf("${%s:%s} must be the whole template", ref, typ)
				}
			default:
				return a, fmt.Errorf("unknown type %q in ${%s:%s} (want int, number or bool)", typ, ref, typ)
			}
			g := groupIndex(names, ref)
			if g < 0 {
				return a, fmt.Errorf("unknown group %q (the regexp has %s)", ref, describeGroups(names))
			}
			a.typ = typ
			a.parts = append(a.parts, tmplPart{group: g})
			rest = rest[end+1:]
		default:
			lit("$")
			rest = rest[1:]
		}
	}
	return a, nil
}

func groupIndex(names []string, ref string) int {
	if ref == "" {
		return -1
	}
	if n, err := strconv.Atoi(ref); err == nil {
		if n >= 0 && n < len(names) {
			return n
		}
		return -1
	}
	for i, name := range names {
		if i > 0 && name == ref {
			return i
		}
	}
	return -1
}

func describeGroups(names []string) string {
	var named []string
	for _, n := range names[1:] {
		if n != "" {
			named = append(named, n)
		}
	}
	s := fmt.Sprintf("groups 0..%d", len(names)-1)
	if len(named) > 0 {
		s += " and names " + strings.Join(named, ", ")
	}
	return s
}

// match expands the pattern's arguments for text; ok is false when the
// regexp does not match or a typed argument does not convert.
func (p *rulePattern) match(text string) (args map[string]any, ok bool) {
	sub := p.re.FindStringSubmatchIndex(text)
	if sub == nil {
		return nil, false
	}
	group := func(g int) string {
		if sub[2*g] < 0 {
			return ""
		}
		return text[sub[2*g]:sub[2*g+1]]
	}
	args = map[string]any{}
	for _, a := range p.args {
		var b strings.Builder
		for _, part := range a.parts {
			if part.group < 0 {
				b.WriteString(part.lit)
			} else {
				b.WriteString(group(part.group))
			}
		}
		v := b.String()
		if v == "" {
			continue
		}
		switch a.typ {
		case "":
			args[a.key] = v
		case "int":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return nil, false
			}
			args[a.key] = n
		case "number":
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, false
			}
			args[a.key] = f
		case "bool":
			t, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return nil, false
			}
			args[a.key] = t
		}
	}
	return args, true
}

// intent is what a message asks for: a tool call or a text answer.
type intent struct {
	tool       string
	args       map[string]any
	confidence float64
	text       string
}

// Complete answers the last message; see Rules. The error is non-nil only
// when ctx is done.
func (m *Rules) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	if err := ctx.Err(); err != nil {
		return agent.Response{}, agent.NewModelError(publicFailed, err)
	}
	msgs := req.Messages
	user, hasUser := lastUser(msgs)
	// The turn's language, or Chinese for a message written in Chinese.
	zh := words.Of(req.Lang) == words.ZH || hasUser && hasHan(user.Content)
	if n := len(msgs); n > 0 && msgs[n-1].Role == agent.RoleTool {
		return textResponse(summarise(msgs, zh)), nil
	}
	if n := len(msgs); n > 0 && hasUser && msgs[n-1].Role == agent.RoleSystem {
		// An update on an earlier approval (its outcome came later, or a
		// person resolved its frozen call): the replies of its calls,
		// when they follow the user's last message, else the update
		// itself. The user's message is not read again (that would ask
		// for the same call once more).
		if toolSinceUser(msgs) {
			return textResponse(summarise(msgs, zh)), nil
		}
		return textResponse(msgs[n-1].Content), nil
	}
	if !hasUser {
		return textResponse(m.help()), nil
	}
	lang := words.EN
	if zh {
		lang = words.ZH
	}
	if resp, ok := m.command(user.Content, req.Tools, lang); ok {
		return resp, nil
	}
	in := m.interpret(user.Content)
	if in.tool == "" {
		return textResponse(in.text), nil
	}
	if !offers(req.Tools, in.tool) {
		return textResponse(words.Text(lang, words.RulesNotOffered, in.tool)), nil
	}
	args, err := json.Marshal(in.args)
	if err != nil { // cannot happen: strings, numbers and bools only
		return agent.Response{}, agent.NewModelError(publicFailed, err)
	}
	return agent.Response{Message: agent.Message{
		Role:      agent.RoleAssistant,
		ToolCalls: []agent.ToolCall{{ID: "rules-1", Name: in.tool, Args: args, Confidence: in.confidence}},
	}}, nil
}

func textResponse(s string) agent.Response {
	return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: s}}
}

func lastUser(msgs []agent.Message) (agent.Message, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == agent.RoleUser {
			return msgs[i], true
		}
	}
	return agent.Message{}, false
}

func offers(tools []agent.ToolSpec, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// interpret maps one user message to an intent.
func (m *Rules) interpret(raw string) intent {
	trimmed := strings.TrimSpace(raw)
	for i := range m.patterns {
		p := &m.patterns[i]
		if args, ok := p.match(trimmed); ok {
			return intent{tool: p.tool, args: args, confidence: p.confidence}
		}
	}
	if in, ok := m.sqlIntent(trimmed); ok {
		return in
	}

	text := normalize(trimmed)
	question := strings.ContainsAny(text, "?") // full-width ？ is folded to ?
	qmul := 1.0
	if question {
		qmul = 0.5
	}
	text = strings.TrimRight(text, trailingPunct)
	if loc := reTrailingPolite.FindStringIndex(text); loc != nil && loc[0] > 0 {
		text = strings.TrimRight(text[:loc[0]], trailingPunct)
	}
	polite := stripLeadIns(text, politeLeadIns)
	cmd := stripLeadIns(stripLeadIns(polite, wantLeadIns), politeLeadIns)

	if reList.MatchString(cmd) {
		return intent{tool: "task_list", args: map[string]any{}, confidence: 1}
	}
	for _, c := range idCommands {
		sm := c.re.FindStringSubmatch(cmd)
		if sm == nil {
			continue
		}
		// Each alternative has its own group; one of them matched.
		var digits string
		for _, g := range sm[1:] {
			if g != "" {
				digits = g
				break
			}
		}
		id, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || id <= 0 {
			break
		}
		return intent{tool: c.tool, args: map[string]any{"id": id}, confidence: qmul}
	}
	for _, c := range createPhrases {
		src := cmd
		if c.onPolite {
			src = polite
		}
		sm := c.re.FindStringSubmatch(src)
		if sm == nil {
			continue
		}
		title, due := splitDue(cleanTitle(sm[1]))
		switch strings.ToLower(title) {
		case "", "to", "about", "that": // "remind me to" says nothing yet
			continue
		}
		conf := c.confidence * qmul
		if uncertain(title) {
			conf *= 0.8
		}
		if utf8.RuneCountInString(title) < 5 {
			conf *= 0.7
		}
		args := map[string]any{"title": title}
		if due != "" {
			args["due"] = due
		}
		return intent{tool: "task_create", args: args, confidence: conf}
	}
	return intent{text: m.help()}
}

// sqlIntent handles "/sql <statement>" on the message as written.
func (m *Rules) sqlIntent(s string) (intent, bool) {
	if len(s) < 4 || !strings.EqualFold(s[:4], "/sql") {
		return intent{}, false
	}
	rest := s[4:]
	if rest != "" {
		r, _ := utf8.DecodeRuneInString(rest)
		if !unicode.IsSpace(r) {
			return intent{}, false // e.g. "/sqlite"
		}
	}
	stmt := strings.TrimSpace(rest)
	if stmt == "" {
		return intent{text: "Usage: /sql <statement>, e.g. /sql SELECT count(*) FROM orders\n用法：/sql <语句>"}, true
	}
	args := map[string]any{"statement": stmt}
	tool := "sql_execute"
	if m.isRead(args) {
		tool = "sql_query"
	}
	return intent{tool: tool, args: args, confidence: 1}, true
}

// isRead asks the tools whether sql_query takes args as a read and
// sql_execute does not take them (so that a pair of tools that cannot
// tell says no).
func (m *Rules) isRead(args map[string]any) bool {
	if m.tools == nil {
		return false
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return false
	}
	if k, err := m.tools.Check("sql_query", raw); err != nil || k != approval.EffectRead {
		return false
	}
	_, err = m.tools.Check("sql_execute", raw)
	return err != nil
}

// trailingPunct is stripped from the end of a message before matching.
const trailingPunct = " \t.!?。！？,，;；~～…"

// normalize folds full-width ASCII to half-width, turns every run of white
// space into one space and trims.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case r == '\u3000':
			r = ' '
		case r >= '\uFF01' && r <= '\uFF5E':
			r -= 0xFEE0
		case r == utf8.RuneError:
			continue
		}
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

var (
	reTrailingPolite = regexp.MustCompile(`(?i)[\s,]+(?:please|pls|plz|thanks|thank you|thx)$`)
	politeLeadIns    = regexp.MustCompile(`(?i)^(?:(?:please|pls|plz|kindly|hey|hi|okay|ok|(?:can|could|would|will) you(?: please)?)\b[\s,:]*|(?:请|帮我|麻烦你?|能不能|可以)[\s,:]*)+`)
	wantLeadIns      = regexp.MustCompile(`(?i)^(?:(?:i(?:'d| would) like to|i (?:really )?(?:need|want) to|let'?s)\b|我要|我想|我需要)\s*`)
)

func stripLeadIns(s string, re *regexp.Regexp) string {
	if loc := re.FindStringIndex(s); loc != nil && loc[1] < len(s) {
		return s[loc[1]:]
	}
	return s
}

var reList = regexp.MustCompile(`(?i)^(?:` +
	`(?:list|show|display|view|see|get)(?: me)?(?: all)?(?: (?:my|the|our))?(?: (?:open|pending|current))? (?:tasks?|task list|todos|to-dos|todo list|to-do list)` +
	`|what are my tasks|what(?:'s| is) on my (?:task|todo|to-do) list|(?:my )?tasks` +
	`|任务列表|查看任务|我的任务|所有任务|列出任务|看看任务)$`)

var idCommands = []struct {
	tool string
	re   *regexp.Regexp
}{
	{"task_complete", regexp.MustCompile(`(?i)^(?:(?:complete|finish|close)(?: the)? task (?:#|no\.? ?|number )?(\d+)` +
		`|mark(?: the)? task (?:#|no\.? ?|number )?(\d+) (?:as )?(?:done|complete|completed|finished)` +
		`|task #?(\d+) (?:is )?(?:done|complete|completed|finished)` +
		`|完成任务 ?[:#]? ?#?(\d+))$`)},
	{"task_delete", regexp.MustCompile(`(?i)^(?:(?:delete|remove)(?: the)? task (?:#|no\.? ?|number )?(\d+)` +
		`|(?:删除|删掉|移除)任务 ?[:#]? ?#?(\d+))$`)},
}

var createPhrases = []struct {
	re         *regexp.Regexp
	confidence float64
	onPolite   bool // match on the text with only polite lead-ins removed
}{
	{regexp.MustCompile(`(?i)^(?:create|add|make|new|open)(?: (?:a|an|one|another))?(?: new)? (?:task|todo|to-do)(?: ?[:\-–—] ?| (?:to|called|named|for) | )(.+)$`), 0.95, false},
	{regexp.MustCompile(`^(?:创建|新建|添加|新增)任务 ?:? ?(.+)$`), 0.95, false},
	{regexp.MustCompile(`(?i)^(?:task|todo|to-do) ?: ?(.+)$`), 0.90, false},
	{regexp.MustCompile(`(?i)^remind(?:er)?(?: ?: ?| me ?: ?| me (?:to|about|that) | me )(.+)$`), 0.85, false},
	{regexp.MustCompile(`^提醒我 ?:? ?(.+)$`), 0.85, false},
	{regexp.MustCompile(`(?i)^i (?:really )?need to (.+)$`), 0.75, true},
	{regexp.MustCompile(`(?i)^(?:add|put|save|write down|note|jot down) (.+?) (?:to|on|in|into|onto) (?:my|the|our) (?:tasks|task list|todos|to-dos|todo list|to-do list|list of tasks)$`), 0.65, false},
	{regexp.MustCompile(`(?i)^(?:add|make|save|create|put) (.+?) as (?:a )?(?:new )?(?:task|todo|to-do)$`), 0.65, false},
	{regexp.MustCompile(`(?i)^make (.+?) (?:a|my) task$`), 0.65, false},
	{regexp.MustCompile(`^把(.+?)(?:加到|加入|添加到|放到|放进|记到)(?:我的)?(?:任务列表|任务|待办事项|待办)(?:里|中)?$`), 0.65, false},
}

// cleanTitle trims space, trailing punctuation and one pair of surrounding
// quotes.
func cleanTitle(s string) string {
	s = strings.Trim(s, trailingPunct)
	for _, q := range [][2]string{{`"`, `"`}, {`'`, `'`}, {"“", "”"}, {"‘", "’"}, {"「", "」"}, {"『", "』"}, {"`", "`"}} {
		if len(s) >= len(q[0])+len(q[1]) && strings.HasPrefix(s, q[0]) && strings.HasSuffix(s, q[1]) {
			s = strings.Trim(s[len(q[0]):len(s)-len(q[1])], trailingPunct)
			break
		}
	}
	return s
}

const enDate = `today|tonight|tomorrow|(?:(?:next|this) )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|\d{4}-\d{2}-\d{2}(?:[ t]\d{1,2}:\d{2})?`
const zhDate = `今天|今晚|明天|明早|明晚|后天|(?:下|这|本)?(?:周|星期|礼拜)[一二三四五六日天]`

var (
	reDueEnd   = regexp.MustCompile(`(?i)^(.+?),? (?:(?:by|on|at|due|before|for) )?(` + enDate + `)$`)
	reDueStart = regexp.MustCompile(`(?i)^(?:on )?(` + enDate + `),? (?:to )?(.+)$`)
	reDueZhEnd = regexp.MustCompile(`^(.+?) ?(` + zhDate + `)(?:之前|前)?$`)
	reDueZhBeg = regexp.MustCompile(`^(` + zhDate + `) ?(.+)$`)
)

// splitDue moves a clear date at the start or end of title into due.
func splitDue(title string) (string, string) {
	if sm := reDueEnd.FindStringSubmatch(title); sm != nil {
		return cleanTitle(sm[1]), strings.ToLower(sm[2])
	}
	if sm := reDueStart.FindStringSubmatch(title); sm != nil {
		return cleanTitle(sm[2]), strings.ToLower(sm[1])
	}
	if sm := reDueZhBeg.FindStringSubmatch(title); sm != nil {
		return cleanTitle(sm[2]), sm[1]
	}
	if sm := reDueZhEnd.FindStringSubmatch(title); sm != nil {
		return cleanTitle(sm[1]), sm[2]
	}
	return title, ""
}

var (
	reUncertainEn = regexp.MustCompile(`(?i)\b(?:sometime|some time|someday|some day|soon|later|eventually|at some point|one day|one of these days|whenever|next week|next month|this week|this month|in a while)\b`)
	reUncertainZh = regexp.MustCompile(`以后|有空|改天|过几天|下个月|回头|某天|哪天|找时间|下周[一二三四五六日天]?`)
)

func uncertain(title string) bool {
	if reUncertainEn.MatchString(title) {
		return true
	}
	for _, w := range reUncertainZh.FindAllString(title, -1) {
		if w != "下周" && strings.HasPrefix(w, "下周") {
			continue // 下周一 is a date
		}
		return true
	}
	return false
}

const helpText = `I understand these commands:
• /tools — list the tools, with their risk
• /call <tool> <JSON arguments> — call any tool, e.g. /call task_list {}
• /sql <statement> — run SQL (a read with sql_query; anything else with sql_execute, which asks first)
• create a task: <title> — or "task: <title>", "remind me to <title>", "I need to <title>", "add <title> to my tasks"
• list tasks — or "show tasks"
• complete task <n> · delete task <n>
我能理解这些指令：
• /tools 或 /工具 — 列出所有工具及其风险
• /call <工具> <JSON 参数> — 调用任意工具，例如 /call task_list {}
• /sql <语句> — 执行 SQL
• 创建任务：<标题> — 或“提醒我<事情>”
• 任务列表
• 完成任务 <编号> · 删除任务 <编号>`

func (m *Rules) help() string {
	var names []string
	for _, p := range m.patterns {
		if p.name != "" {
			names = append(names, p.name)
		}
	}
	if len(names) == 0 {
		return helpText
	}
	return helpText + "\nAlso / 另外: " + strings.Join(names, ", ")
}

// toolSinceUser reports whether a tool message follows the last user
// message.
func toolSinceUser(msgs []agent.Message) bool {
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != agent.RoleUser; i-- {
		if msgs[i].Role == agent.RoleTool {
			return true
		}
	}
	return false
}

// summarise reports the tool results since the last user message.
func summarise(msgs []agent.Message, zh bool) string {
	lang := words.EN
	if zh {
		lang = words.ZH
	}
	start := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == agent.RoleUser {
			start = i + 1
			break
		}
	}
	names := map[string]string{}
	var lines []string
	for _, msg := range msgs[start:] {
		switch msg.Role {
		case agent.RoleAssistant:
			for _, c := range msg.ToolCalls {
				names[c.ID] = c.Name
			}
		case agent.RoleTool:
			name := msg.Name
			if name == "" {
				name = names[msg.ToolCallID]
			}
			if name == "" {
				name = words.Text(lang, words.RulesTheTool)
			}
			lines = append(lines, resultLine(name, msg, lang))
		}
	}
	if len(lines) == 0 {
		return words.Text(lang, words.RulesNothing)
	}
	return strings.Join(lines, "\n")
}

// outcome says which of the statuses the summary words itself a tool
// message has: rejected, expired, cancelled, superseded, pending, or ""
// (anything else: its content is reported as is). It reads the message's
// Status, never its words.
func outcome(msg agent.Message) approval.Status {
	switch msg.Status {
	case approval.StatusRejected, approval.StatusExpired, approval.StatusCancelled, approval.StatusSuperseded, approval.StatusPending:
		return msg.Status
	}
	return ""
}

// outcomeWords is the sentence of each status outcome names.
var outcomeWords = map[approval.Status]words.Key{
	approval.StatusRejected:   words.RulesRejected,
	approval.StatusExpired:    words.RulesExpired,
	approval.StatusCancelled:  words.RulesCancelled,
	approval.StatusSuperseded: words.RulesSuperseded,
	approval.StatusPending:    words.RulesPending,
}

func resultLine(name string, msg agent.Message, lang words.Lang) string {
	content := strings.TrimSpace(msg.Content)
	if o := outcome(msg); o != "" {
		return words.Text(lang, outcomeWords[o], name)
	}
	switch msg.Status {
	case approval.StatusFailed:
		if !strings.HasPrefix(content, "Failed: ") {
			break // not run (declined in a batch): the reply says why
		}
		// The loop wrote "Failed: <the tool's result>" for the model.
		return words.Text(lang, words.RulesFailed, name, clip.Runes(strings.TrimPrefix(content, "Failed: "), 1500))
	case approval.StatusFrozen:
		return words.Text(lang, words.RulesFrozen, name)
	}
	if content == "" {
		return words.Text(lang, words.RulesFinished, name)
	}
	return name + ": " + clip.Runes(content, 1500)
}

// Interface guard.
var _ agent.Model = (*Rules)(nil)
