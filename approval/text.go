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
