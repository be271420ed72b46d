package api

import (
	"strings"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

// decisionOf reads the verb of a DecisionRequest, and for "resolve" its
// resolution; a payloadSha256 is required to approve and to resolve (a
// resolution binds to what the resolver saw, as an approval does). Bad
// input is a 400 that names what is wrong.
func decisionOf(req DecisionRequest) (approval.Verb, approval.Resolution, *apiError) {
	hash := strings.TrimSpace(req.PayloadSHA256)
	switch req.Decision {
	case "approve", "reject", "edit":
		if req.Resolution != "" {
			return "", "", fail(CodeInvalidRequest, words.APIResolutionOnly)
		}
		if req.Decision != "reject" && hash == "" {
			return "", "", fail(CodeInvalidRequest, words.APIHashRequired)
		}
		if req.Decision == "edit" {
			return approval.Approve, "", nil // approves the edited arguments
		}
		return approval.Verb(req.Decision), "", nil
	case "resolve":
		r, err := approval.ParseResolution(req.Resolution)
		if err != nil {
			return "", "", fail(CodeInvalidRequest, words.APIResolution)
		}
		if hash == "" {
			return "", "", fail(CodeInvalidRequest, words.APIHashRequiredResolve)
		}
		return approval.Resolve, r, nil
	}
	return "", "", fail(CodeInvalidRequest, words.APIDecisionVerb)
}

// resolvable refuses a resolution the API can tell in advance will not be
// taken: by one the approval's rule does not let decide it (without
// saying its state), or of an approval that is not frozen (409). The claim
// still judges everything (a race, four eyes).
func resolvable(u User, rec *approval.Approval, permitted bool, lang words.Lang) *apiError {
	switch {
	case !permitted:
		return refusal(u, rec, lang)
	case rec.State != approval.StateFrozen:
		return fail(CodeConflict, words.APINotFrozen, rec.State)
	}
	return nil
}
