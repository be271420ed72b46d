package agent

// The catalogue is imported under another name: this package's words is
// the struct below, which loop.go uses by that name.
import catalogue "github.com/hitlbot/hitlbot/words"

// words are the sentences the loop says to people, in one language, from
// the catalogue (package words). The model's own answers are in whatever
// language it chooses; these are the loop's notices about the turn itself.
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
	noHistory    string // the history could not be loaded
}

// wordsFor returns the words of lang ("en" or "zh"; others get English).
func wordsFor(lang string) words {
	l := catalogue.Of(lang)
	return words{
		maxRounds:    catalogue.Text(l, catalogue.AgentMaxRounds),
		modelFailed:  catalogue.Text(l, catalogue.ModelFailed),
		tooLong:      catalogue.Text(l, catalogue.AgentTooLong),
		stillWaiting: catalogue.Text(l, catalogue.AgentStillWaiting),
		shuttingDown: catalogue.Text(l, catalogue.AgentShuttingDown),
		unavailable:  catalogue.Text(l, catalogue.AgentUnavailable),
		busy:         catalogue.Text(l, catalogue.AgentBusy),
		stillWorking: catalogue.Text(l, catalogue.AgentStillWorking),
		notRun:       catalogue.Text(l, catalogue.AgentNotRun),
		resumeGone:   catalogue.Text(l, catalogue.AgentResumeGone),
		noHistory:    catalogue.Text(l, catalogue.AgentNoHistory),
	}
}
