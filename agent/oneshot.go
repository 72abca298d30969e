package agent

import (
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ScanLogDirs reads each log dir once, for a one-shot report (the scan
// command): ScanLogDir with no earlier scan, then, for a dir that was
// read, its usage (DiskUsage with capacity; one that cannot be read is
// logged and left zero). Health holds when the scan ended, how long it
// took and the scanner's error counts. BuildSnapshot turns the result,
// with configs, into a Snapshot.
func (s *Scanner) ScanLogDirs(paths []string, capacity uint64) ([]LogDir, Health) {
	start := time.Now()
	dirs := make([]LogDir, 0, len(paths))
	for _, path := range paths {
		ld := s.ScanLogDir(path, nil)
		if ld.Err == nil {
			u, err := DiskUsage(path, capacity, ld.DiskBytes)
			if err != nil {
				s.logger.Warn("disk usage unknown", "log_dir", path, "err", err)
			}
			ld.Usage = u
		}
		dirs = append(dirs, ld)
	}
	return dirs, Health{LastFullScan: time.Now(), LastFullScanDuration: time.Since(start), ScanErrors: s.Errors()}
}

// ListLiveTopics lists, sorted and each once, the topics of the live
// partition directories (KindLive) in the log dirs, glob patterns
// expanded, without reading any segment. What cannot be read is skipped:
// it is a hint for a check, not a scan.
func ListLiveTopics(logDirs []string) []string {
	var out []string
	for _, entry := range logDirs {
		dirs, _ := filepath.Glob(entry)
		for _, d := range dirs {
			entries, _ := os.ReadDir(d)
			for _, e := range entries {
				if topic, _, kind, ok := ParsePartitionDirName(e.Name()); ok && kind == KindLive && e.IsDir() {
					out = append(out, topic)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
