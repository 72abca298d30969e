package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestListLiveTopics(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{
		"a/orders-0", "a/orders-1", "a/pay-0", "a/pay-0.abc-delete", "a/x-0.abc-future",
		"b/orders-2", "b/__consumer_offsets-0", "b/not a partition",
	} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a", "file-0"), nil, 0o644); err != nil { // a file, not a directory
		t.Fatal(err)
	}
	got := ListLiveTopics([]string{filepath.Join(root, "*"), filepath.Join(root, "missing")})
	if want := []string{"__consumer_offsets", "orders", "pay"}; !slices.Equal(got, want) {
		t.Errorf("ListLiveTopics = %q, want %q", got, want)
	}
}

func TestLiveTopicsNilSnapshot(t *testing.T) {
	var s *Snapshot
	if got := s.LiveTopics(); got != nil {
		t.Errorf("nil snapshot: %q", got)
	}
}
