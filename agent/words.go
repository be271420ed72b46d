package agent

// words are the sentences the loop says to people, in one language. The
// model's own answers are in whatever language it chooses; these are the
// loop's notices about the turn itself.
type words struct {
	maxRounds    string // fmt: the number of rounds
	modelFailed  string
	tooLong      string
	stillWaiting string // also kept in the conversation
	shuttingDown string
	unavailable  string
	busy         string
	stillWorking string
	notRun       string // prefix of a call's result when it was not run
	resumeGone   string // fmt: the approval's status; its turn is no longer in the history
}

// wordsByLang holds the loop's words; a language not listed speaks English.
var wordsByLang = map[string]words{
	"en": {
		maxRounds:    "I stopped after %d rounds of tool calls without finishing; please narrow the request.",
		modelFailed:  "The language model failed; please try again.",
		tooLong:      "This took too long and was stopped; please try again.",
		stillWaiting: "⏳ The approval is still waiting for a decision; nothing has run yet. It stays open until someone decides or it expires; then I will continue here with its result.",
		shuttingDown: "The assistant is shutting down; please try again shortly.",
		unavailable:  "This conversation is temporarily unavailable; please try again shortly.",
		busy:         "This conversation is still busy with an earlier message; please try again shortly.",
		stillWorking: "⏳ Still working on it…",
		notRun:       "Not run: ",
		resumeGone:   "The approval ended (%s), but this conversation no longer holds the request it answered, so I cannot go on from it; ask again if you still need it.",
	},
	"zh": {
		maxRounds:    "已连续调用工具 %d 轮仍未完成，已停止；请把请求说得更具体一些。",
		modelFailed:  "语言模型出错，请稍后重试。",
		tooLong:      "处理时间过长，已停止；请重试。",
		stillWaiting: "⏳ 审批仍在等待确认，尚未执行；确认或过期前会一直保留，有结果后我会在这里接着处理。",
		shuttingDown: "助手正在关闭，请稍后重试。",
		unavailable:  "本对话暂时不可用，请稍后重试。",
		busy:         "本对话仍在处理之前的消息，请稍后重试。",
		stillWorking: "⏳ 仍在处理中…",
		notRun:       "未执行：",
		resumeGone:   "审批已结束（%s），但本对话已不再保存它所回应的请求，无法接着处理；如仍需要，请重新提问。",
	},
}

// wordsFor returns the words of lang ("en" or "zh"; others get English).
func wordsFor(lang string) words {
	if w, ok := wordsByLang[lang]; ok {
		return w
	}
	return wordsByLang["en"]
}
