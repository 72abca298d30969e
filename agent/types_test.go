package agent

import (
	"encoding/json"
	"testing"
	"unsafe"
)

// TestSegmentSize: the agent keeps one Segment per segment on disk, a
// million on a big broker; its size is the floor of the running agent's
// memory (issue 24). Field order matters: the one-byte enums go last.
func TestSegmentSize(t *testing.T) {
	if got := unsafe.Sizeof(Segment{}); got > 48 {
		t.Errorf("Segment is %d bytes, want at most 48", got)
	}
	if got := unsafe.Sizeof(Partition{}); got > 184 {
		t.Errorf("Partition is %d bytes, want at most 184 (the agent keeps two a partition directory)", got)
	}
	if got := unsafe.Sizeof(partState{}); got > 80 {
		t.Errorf("partState is %d bytes, want at most 80 (the live agent keeps one a partition directory)", got)
	}
}

// TestEnumNames: the one-byte enums spell as the strings they replaced,
// in String, in JSON (values and map keys) and back.
func TestEnumNames(t *testing.T) {
	states := map[State]string{0: "", StateOpen: "open", StateClosed: "closed", StateEligible: "eligible"}
	reasons := map[Reason]string{ReasonNone: "",
		ReasonRetentionTime: "retention_time", ReasonRetentionSize: "retention_size",
		ReasonLogStartOffset: "log_start_offset", ReasonAllExpiredActive: "all_expired_active",
		ReasonLocalRetentionTime: "local_retention_time", ReasonLocalRetentionSize: "local_retention_size",
		RetainedOpenSegment: "open_segment", RetainedAwaitingDelete: "awaiting_deletion", RetainedPendingDeletion: "pending_delete",
		HeldMoving: "moving", HeldCleanerDisabled: "cleaner_disabled", HeldLogDirOffline: "log_dir_offline"}
	sources := map[TimestampSource]string{0: "", TimestampFromTimeIndex: "time_index", TimestampFromMtime: "mtime"}
	check(t, states)
	check(t, reasons)
	check(t, sources)
	if len(reasons) != len(reasonNames) {
		t.Errorf("%d reasons tested, %d named", len(reasons), len(reasonNames))
	}
	b, err := json.Marshal(map[Reason]int{HeldMoving: 1, ReasonRetentionTime: 2})
	if err != nil || string(b) != `{"moving":1,"retention_time":2}` {
		t.Errorf("map keys: %s, %v", b, err)
	}
	var r Reason
	if err := json.Unmarshal([]byte(`"no_such_reason"`), &r); err == nil {
		t.Error("an unknown reason parsed")
	}
	if s := State(200).String(); s != "200" {
		t.Errorf("out of range state spells %q", s)
	}
}

func check[T interface {
	~uint8
	String() string
}](t *testing.T, names map[T]string) {
	t.Helper()
	for v, want := range names {
		if got := v.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", v, got, want)
		}
		b, err := json.Marshal(struct{ V T }{v})
		if err != nil || string(b) != `{"V":"`+want+`"}` {
			t.Errorf("json of %d: %s, %v", v, b, err)
		}
		var back struct{ V T }
		if err := json.Unmarshal(b, &back); err != nil || back.V != v {
			t.Errorf("json %s read back as %d, %v", b, back.V, err)
		}
	}
}
