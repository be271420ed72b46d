package agent

import (
	"context"
	"encoding/json"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clip"
	catalogue "github.com/hitlbot/hitlbot/words"
)

// Explainer is a Tool that says what its calls do for the person who
// approves them, in both languages (a sentence of the catalogue of package
// words). Description is written for the model; the card shows this.
type Explainer interface {
	// Explain says what a call of the tool does, for its approver.
	Explain() approval.Words
}

// WordsPreviewer is a Tool whose preview is said in both languages (the
// numbers the same, the words from the catalogue): each card of an
// approval shows it in its own channel's language. The loop asks it
// instead of Preview.
type WordsPreviewer interface {
	// PreviewWords is Preview in English and Chinese.
	PreviewWords(ctx context.Context, args json.RawMessage) (approval.Words, error)
}

// maxAboutRunes bounds the fallback About taken from a tool's own
// description.
const maxAboutRunes = 200

// About says what a call of t does for its approver, looking through
// wrappers: the tool's Explain; for a tool another program defines (MCP),
// a catalogue sentence naming it as such, with the first line of its own
// description as that program's word; else the first line of the tool's
// description (operators write those of the tools they define in YAML).
func About(t Tool) approval.Words {
	for u := t; u != nil; {
		if e, ok := u.(Explainer); ok {
			return e.Explain()
		}
		w, ok := u.(interface{ Unwrap() Tool })
		if !ok {
			break
		}
		u = w.Unwrap()
	}
	desc := clip.Runes(clip.FirstLine(t.Description()), maxAboutRunes)
	if f, ok := AsForeign(t); ok {
		return approval.Say(catalogue.AboutForeign, f.Name(), desc)
	}
	return approval.Words{EN: desc}
}

// previewWords is a call's preview in both languages: the tool's
// PreviewWords when it has one (looking through wrappers), else its
// Preview (the tool's one language: a card in the other shows it as it
// is); a preview the tool cannot make says why.
func previewWords(ctx context.Context, t Tool, args json.RawMessage) approval.Words {
	for u := t; u != nil; {
		if p, ok := u.(WordsPreviewer); ok {
			w, err := p.PreviewWords(ctx, args)
			if err != nil {
				return approval.Say(catalogue.AgentNoPreview, err.Error())
			}
			return w
		}
		w, ok := u.(interface{ Unwrap() Tool })
		if !ok {
			break
		}
		u = w.Unwrap()
	}
	p, err := t.Preview(ctx, args)
	if err != nil {
		return approval.Say(catalogue.AgentNoPreview, err.Error())
	}
	return approval.Words{EN: p}
}
