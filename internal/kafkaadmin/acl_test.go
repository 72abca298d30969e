package kafkaadmin

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// shaped is n topics of per bindings each, listed topic by topic.
func shaped(n, per int) []enforcer.ACL {
	var out []enforcer.ACL
	for i := range n {
		for j := range per {
			out = append(out, enforcer.ACL{Topic: fmt.Sprintf("t%05d", i), Principal: fmt.Sprintf("User:%d", j)})
		}
	}
	return out
}

// A request never cuts through a topic's bindings unless the topic alone
// fills it; the batches are the bindings in their order.
func TestACLBatches(t *testing.T) {
	for _, c := range []struct {
		name  string
		acls  []enforcer.ACL
		limit int
		want  []int
	}{
		{"none", nil, 1000, nil},
		{"five a topic fill requests exactly", shaped(1000, 5), 1000, []int{1000, 1000, 1000, 1000, 1000}},
		{"six a topic (an exempt principal) cut between topics", shaped(400, 6), 1000, []int{996, 996, 408}},
		{"one a topic", shaped(2500, 1), 1000, []int{1000, 1000, 500}},
		{"a topic wider than a request is cut", append(shaped(1, 7), shaped(3, 2)[2:]...), 3, []int{3, 3, 3, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []int
			var again []enforcer.ACL
			for _, b := range aclBatches(c.acls, c.limit) {
				got = append(got, len(b))
				again = append(again, b...)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("batches %v, want %v", got, c.want)
			}
			if !slices.Equal(again, c.acls) {
				t.Error("the batches are not the bindings in their order")
			}
		})
	}
}
