package agent

import (
	"container/heap"
	"math"
)

// dueHeap orders a log dir's partitions by the instant the passing of time
// can next change their classification (partState.stableUntilMs), earliest
// first, so the reclassify tick visits only those whose boundary passed.
// A partition whose classification time cannot change is not in it.
type dueHeap []*partState

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].stableUntilMs < h[j].stableUntilMs }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].dueAt, h[j].dueAt = int32(i+1), int32(j+1)
}

func (h *dueHeap) Push(x any) {
	ps := x.(*partState)
	*h = append(*h, ps)
	ps.dueAt = int32(len(*h))
}

func (h *dueHeap) Pop() any {
	old := *h
	ps := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	ps.dueAt = 0
	return ps
}

// update puts ps in its place after its stableUntilMs changed.
func (h *dueHeap) update(ps *partState) {
	switch {
	case ps.stableUntilMs == math.MaxInt64:
		h.remove(ps)
	case ps.dueAt == 0:
		heap.Push(h, ps)
	default:
		heap.Fix(h, int(ps.dueAt-1))
	}
}

// remove takes ps out (a partition gone, or one time cannot change).
func (h *dueHeap) remove(ps *partState) {
	if ps.dueAt != 0 {
		heap.Remove(h, int(ps.dueAt-1))
	}
}

// popDue takes out every partition whose boundary is at or before nowMs.
func (h *dueHeap) popDue(nowMs int64) []*partState {
	var out []*partState
	for len(*h) > 0 && (*h)[0].stableUntilMs <= nowMs {
		out = append(out, heap.Pop(h).(*partState))
	}
	return out
}
