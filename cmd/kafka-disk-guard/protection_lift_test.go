package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Issue 20 point 2: a lift exits non-zero while anything it was asked to
// lift may still be in place, including the claims of a broker whose
// record does not decode (left alone: what it claims is unknown).
func TestR8_7LiftFailsWhileAnUndecodableRecordIsLeftAlone(t *testing.T) {
	req := ledger.LiftRequest{All: true, By: "op"}
	for _, tc := range []struct {
		name string
		res  ledger.LiftResult
		want int
	}{
		{"everything lifted", ledger.LiftResult{Lifts: []ledger.Lift{{BrokerID: 1}}}, 0},
		{"nothing to lift", ledger.LiftResult{}, 0},
		{"a record does not decode", ledger.LiftResult{Lifts: []ledger.Lift{{BrokerID: 1}}, Untouchable: []int32{2}}, 1},
		{"only an undecodable record", ledger.LiftResult{Untouchable: []int32{3}}, 1},
		{"still in place", ledger.LiftResult{Remaining: []string{"binding x"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := reportLift(streams{stdout: &stdout, stderr: &stderr}, req, tc.res, nil, nil)
			if got := exitCode(err); got != tc.want {
				t.Fatalf("exit %d, want %d: %v\n%s", got, tc.want, err, stdout.String())
			}
			if len(tc.res.Untouchable) > 0 && !strings.Contains(stdout.String(), "Left alone") {
				t.Fatalf("no \"Left alone\" line:\n%s", stdout.String())
			}
		})
	}
}
