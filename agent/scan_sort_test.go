package agent

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// segFilesOf returns a partition directory's files as getdents may list
// them (shuffled): n segments of .log, .index and .timeindex, the active
// one with a .snapshot, and two loose files.
func segFilesOf(r *rand.Rand, n int) []segFile {
	var files []segFile
	for i := range n {
		base := int64(i) * 10485
		files = append(files, segFile{base: base, kind: fileLog}, segFile{base: base, kind: fileIndex}, segFile{base: base, kind: fileTimeIndex})
	}
	last := int64(n-1) * 10485
	files = append(files, segFile{base: last, kind: fileMeta, name: "snapshot"},
		segFile{base: -1, kind: fileUnknown, name: "leader-epoch-checkpoint"}, segFile{base: -1, kind: fileUnknown, name: "partition.metadata"})
	r.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
	return files
}

// TestSortSegmentFiles: both of sortSegmentFiles' ways (insertion below
// smallSort files, pdqsort above) order by base offset, then kind, and
// count the .log files.
func TestSortSegmentFiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 10, smallSort/3 - 1, smallSort / 3, smallSort/3 + 1, 100, 1000} {
		for range 20 {
			files := segFilesOf(r, n)
			want := slices.Clone(files)
			slices.SortStableFunc(want, func(a, b segFile) int {
				if a.base != b.base {
					return cmpInt64(a.base, b.base)
				}
				return int(a.kind) - int(b.kind)
			})
			if got := sortSegmentFiles(files); got != n {
				t.Fatalf("%d segments: counted %d", n, got)
			}
			for i := range files {
				if files[i].base != want[i].base || files[i].kind != want[i].kind {
					t.Fatalf("%d segments (%d files): file %d is %d/%d, want %d/%d", n, len(files), i, files[i].base, files[i].kind, want[i].base, want[i].kind)
				}
			}
		}
	}
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// BenchmarkSortSegmentFiles sorts a listed partition directory of 10
// segments (33 files), as a first scan does for every partition.
func BenchmarkSortSegmentFiles(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	listed := segFilesOf(r, 10)
	files := make([]segFile, len(listed))
	for b.Loop() {
		copy(files, listed)
		sortSegmentFiles(files)
	}
}
