package approval

import (
	"fmt"

	"github.com/hitlbot/hitlbot/words"
)

// OutcomeText holds the words shown to people for each outcome status
// (YAML approval.outcome_text, keyed by status). Missing statuses fall back
// to the defaults of the configured language.
type OutcomeText map[Status]string

// outcomeKeys are the catalogue's sentences of each outcome status.
var outcomeKeys = map[Status]words.Key{
	StatusExecuted:       words.OutcomeExecuted,
	StatusReplayed:       words.OutcomeReplayed,
	StatusRejected:       words.OutcomeRejected,
	StatusTampered:       words.OutcomeTampered,
	StatusAlreadyDecided: words.OutcomeAlreadyDecided,
	StatusSuperseded:     words.OutcomeSuperseded,
	StatusFrozen:         words.OutcomeFrozen,
	StatusExpired:        words.OutcomeExpired,
	StatusMissing:        words.OutcomeMissing,
	StatusFailed:         words.OutcomeFailed,
	StatusUnauthorized:   words.OutcomeUnauthorized,
	StatusCancelled:      words.OutcomeCancelled,
	StatusAwaitingQuorum: words.OutcomeAwaitingQuorum,
}

// DefaultOutcomeText returns the catalogue's words (package words) for
// every outcome status in lang ("zh", "en", "zh-CN" …; anything else is
// English).
func DefaultOutcomeText(lang string) OutcomeText {
	l := words.Of(lang)
	t := make(OutcomeText, len(outcomeKeys))
	for st, k := range outcomeKeys {
		t[st] = words.Text(l, k)
	}
	return t
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

// TextIn is t.With(lang).Text(st) without building t.With(lang): a card
// asks for one status, and With made the words of every one.
func (t OutcomeText) TextIn(lang string, st Status) string {
	if s := t[st]; s != "" {
		return s
	}
	k, ok := outcomeKeys[st]
	if !ok {
		return ""
	}
	if s := words.Text(words.Of(lang), k); s != "" {
		return s
	}
	return words.Text(words.EN, k)
}

// Text returns the words for st.
func (t OutcomeText) Text(st Status) string {
	if s, ok := t[st]; ok && s != "" {
		return s
	}
	if k, ok := outcomeKeys[st]; ok {
		return words.Text(words.EN, k)
	}
	return ""
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

// frozenCauses are the catalogue's sentences of each cause: formats whose
// arguments frozenCause's comments name.
var frozenCauses = map[frozenCause]words.Key{
	causeError:       words.FrozenError,
	causeTimeout:     words.FrozenTimeout,
	causeToolTimeout: words.FrozenToolTimeout,
	causeCrashed:     words.FrozenCrashed,
	causeNotRecorded: words.FrozenNotRecorded,
	causeStale:       words.FrozenStale,
	causeEarlier:     words.FrozenEarlier,
}

// frozenCauseText says cause c in lang ("zh"; anything else is English).
func frozenCauseText(lang string, c frozenCause, args ...any) string {
	return words.In(lang, frozenCauses[c], args...)
}
