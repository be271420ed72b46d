package memstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// TestTimeIndex: after every random set, move and remove, due(now, limit)
// answers what sorting every entry would (earliest first, then by id, at
// most limit), and the index holds exactly the ids set and not removed.
func TestTimeIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	x := newTimeIndex()
	model := map[approval.ID]time.Time{}
	ids := make([]approval.ID, 200)
	for i := range ids {
		ids[i] = approval.ID(fmt.Sprintf("ap_%03d", i))
	}
	for step := range 5000 {
		id := ids[rng.IntN(len(ids))]
		if rng.IntN(4) == 0 {
			x.remove(id)
			delete(model, id)
		} else {
			at := t0.Add(time.Duration(rng.IntN(50)) * time.Second) // many ties, broken by id
			x.set(id, at)
			model[id] = at
		}
		now := t0.Add(time.Duration(rng.IntN(60)-5) * time.Second)
		limit := rng.IntN(20) - 2 // <= 0: all
		var want []approval.ID
		for id, at := range model {
			if !at.After(now) {
				want = append(want, id)
			}
		}
		sort.Slice(want, func(i, j int) bool {
			if c := model[want[i]].Compare(model[want[j]]); c != 0 {
				return c < 0
			}
			return want[i] < want[j]
		})
		if limit > 0 && len(want) > limit {
			want = want[:limit]
		}
		if got := x.due(now, limit); !slices.Equal(got, want) {
			t.Fatalf("step %d: due(%v, %d) = %v, want %v", step, now.Sub(t0), limit, got, want)
		}
		if x.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, x.len(), len(model))
		}
		for _, id := range ids {
			if _, ok := model[id]; x.has(id) != ok {
				t.Fatalf("step %d: has(%s) = %v, want %v", step, id, !ok, ok)
			}
		}
	}
}
