package memstore

import (
	"container/heap"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// timeIndex is an index of approvals by a time (the expiry index, the
// escalation index): each id at most once, ordered by (time, id). Setting,
// moving and removing an id cost O(log n); listing the k ids due by a time
// costs O(k log k), whatever n is. It is a binary min-heap with each
// entry's position kept, so an entry can be moved or removed in place.
type timeIndex struct {
	h  indexHeap
	at map[approval.ID]*indexEntry
}

type indexEntry struct {
	id  approval.ID
	at  time.Time
	pos int // index in the heap
}

// before orders entries by time, then by id.
func (e *indexEntry) before(o *indexEntry) bool {
	if c := e.at.Compare(o.at); c != 0 {
		return c < 0
	}
	return e.id < o.id
}

func newTimeIndex() *timeIndex { return &timeIndex{at: map[approval.ID]*indexEntry{}} }

// set puts id in the index at time at, or moves it there.
func (x *timeIndex) set(id approval.ID, at time.Time) {
	if e, ok := x.at[id]; ok {
		e.at = at
		heap.Fix(&x.h, e.pos)
		return
	}
	e := &indexEntry{id: id, at: at}
	x.at[id] = e
	heap.Push(&x.h, e)
}

// remove takes id out of the index (nothing when it is not in it).
func (x *timeIndex) remove(id approval.ID) {
	e, ok := x.at[id]
	if !ok {
		return
	}
	delete(x.at, id)
	heap.Remove(&x.h, e.pos)
}

// has reports whether id is in the index.
func (x *timeIndex) has(id approval.ID) bool {
	_, ok := x.at[id]
	return ok
}

// len returns how many ids the index holds.
func (x *timeIndex) len() int { return len(x.h) }

// due returns up to limit ids (all when limit <= 0) whose time is at or
// before now, earliest first (then by id), leaving the index as it is.
// Entries due form a subtree at the heap's root (a parent is never later
// than its children), so a second heap of the frontier walks them in
// order from the root and reads no entry that is not due, besides the
// frontier's children.
func (x *timeIndex) due(now time.Time, limit int) []approval.ID {
	var out []approval.ID
	if len(x.h) == 0 || x.h[0].at.After(now) {
		return out
	}
	frontier := frontierHeap{h: x.h, pos: []int{0}}
	for len(frontier.pos) > 0 && (limit <= 0 || len(out) < limit) {
		i := heap.Pop(&frontier).(int)
		out = append(out, x.h[i].id)
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(x.h) && !x.h[c].at.After(now) {
				heap.Push(&frontier, c)
			}
		}
	}
	return out
}

// indexHeap is the heap of a timeIndex (container/heap's interface).
type indexHeap []*indexEntry

func (h indexHeap) Len() int           { return len(h) }
func (h indexHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h indexHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *indexHeap) Push(v any) {
	e := v.(*indexEntry)
	e.pos = len(*h)
	*h = append(*h, e)
}
func (h *indexHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// frontierHeap orders positions of an indexHeap by their entries (due's
// walk).
type frontierHeap struct {
	h   indexHeap
	pos []int
}

func (f frontierHeap) Len() int           { return len(f.pos) }
func (f frontierHeap) Less(i, j int) bool { return f.h[f.pos[i]].before(f.h[f.pos[j]]) }
func (f frontierHeap) Swap(i, j int)      { f.pos[i], f.pos[j] = f.pos[j], f.pos[i] }
func (f *frontierHeap) Push(v any)        { f.pos = append(f.pos, v.(int)) }
func (f *frontierHeap) Pop() any {
	v := f.pos[len(f.pos)-1]
	f.pos = f.pos[:len(f.pos)-1]
	return v
}
