package approval

import "fmt"

// OutcomeText holds the words shown to people for each outcome status
// (YAML approval.outcome_text, keyed by status). Missing statuses fall back
// to the defaults of the configured language.
type OutcomeText map[Status]string

// DefaultOutcomeText returns neutral defaults for lang "zh" or "en"
// (anything else is English).
func DefaultOutcomeText(lang string) OutcomeText {
	if lang == "zh" {
		return OutcomeText{
			StatusExecuted:       "已执行",
			StatusReplayed:       "此前已执行，返回上次的结果",
			StatusRejected:       "已取消，未执行",
			StatusTampered:       "确认内容与待审批的操作不一致，未执行",
			StatusAlreadyDecided: "此审批已被处理",
			StatusSuperseded:     "已被更新的请求取代，未执行",
			StatusFrozen:         "执行结果未知，已冻结，不会自动重试；请人工核查",
			StatusExpired:        "审批已过期，未执行",
			StatusMissing:        "找不到此审批",
			StatusFailed:         "执行失败",
			StatusUnauthorized:   "你无权处理此审批",
			StatusCancelled:      "审批已撤销，未执行",
		}
	}
	return OutcomeText{
		StatusExecuted:       "Executed",
		StatusReplayed:       "Already executed earlier; returning that result",
		StatusRejected:       "Declined; nothing was run",
		StatusTampered:       "The confirmation does not match the pending action; nothing was run",
		StatusAlreadyDecided: "This approval has already been decided",
		StatusSuperseded:     "Replaced by a newer request; nothing was run",
		StatusFrozen:         "The result is unknown; the action is frozen and will not be retried automatically. Please check by hand",
		StatusExpired:        "The approval expired; nothing was run",
		StatusMissing:        "No such approval",
		StatusFailed:         "The action failed",
		StatusUnauthorized:   "You may not decide this approval",
		StatusCancelled:      "The approval was withdrawn; nothing was run",
	}
}

// Validate reports statuses that are not in the vocabulary.
func (t OutcomeText) Validate() error {
	for st := range t {
		known := false
		for _, s := range AllStatuses {
			known = known || s == st
		}
		if !known {
			return fmt.Errorf("outcome_text: unknown status %q", st)
		}
	}
	return nil
}

// With returns t completed with the defaults of lang.
func (t OutcomeText) With(lang string) OutcomeText {
	out := DefaultOutcomeText(lang)
	for k, v := range t {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// Text returns the words for st.
func (t OutcomeText) Text(st Status) string {
	if s, ok := t[st]; ok && s != "" {
		return s
	}
	return DefaultOutcomeText("en")[st]
}

// frozenCause is why an approval froze. People read it in zh or en (see
// frozenCauseText); the tool's own error never reaches them, because it may
// hold a secret, a host or a path: it goes to the server log only.
type frozenCause int

const (
	// causeError: the tool returned an error of unknown effect.
	causeError frozenCause = iota
	// causeTimeout: the engine's ExecTimeout ended the run (arg: the bound).
	causeTimeout
	// causeToolTimeout: the tool's own time limit ended it.
	causeToolTimeout
	// causeCrashed: the tool panicked.
	causeCrashed
	// causeNotRecorded: the tool ended but its result could not be stored.
	causeNotRecorded
	// causeStale: the claim got no result in time; the replica running it
	// stopped (args: who approved, when, the bound).
	causeStale
	// causeEarlier: a call after one of unknown effect, not run.
	causeEarlier
)

// frozenCauses are the words of each cause, by language: formats whose
// arguments frozenCause's comments name.
var frozenCauses = map[string]map[frozenCause]string{
	"zh": {
		causeError:       "工具出错，无法确定是否已生效（详情见服务日志）",
		causeTimeout:     "执行超时（%s）",
		causeToolTimeout: "工具执行超时",
		causeCrashed:     "工具崩溃",
		causeNotRecorded: "已执行，但结果未能记录",
		causeStale:       "执行它的副本已停止：%s 于 %s 批准，%s 内没有记录到结果；不会再次执行",
		causeEarlier:     "未执行：本批中更早的操作结果未知",
	},
	"en": {
		causeError:       "the tool stopped with an error, so whether it took effect is unknown (details in the server log)",
		causeTimeout:     "timed out after %s",
		causeToolTimeout: "the tool timed out",
		causeCrashed:     "the tool crashed",
		causeNotRecorded: "it ended, but its result could not be recorded",
		causeStale:       "the replica running it stopped: approved by %s at %s, but no result was recorded within %s; it is not run again",
		causeEarlier:     "not run: an earlier call of this batch has an unknown effect",
	},
}

// frozenCauseText says cause c in lang ("zh"; anything else is English).
func frozenCauseText(lang string, c frozenCause, args ...any) string {
	words, ok := frozenCauses[lang]
	if !ok {
		words = frozenCauses["en"]
	}
	if len(args) == 0 {
		return words[c]
	}
	return fmt.Sprintf(words[c], args...)
}
