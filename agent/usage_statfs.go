package agent

import (
	"github.com/shirou/gopsutil/v4/disk"
)

// statfsUsage is the usage of the filesystem holding path (spec R2.1), as
// df reports it: capacity is used + available, so blocks reserved for root
// (which a broker running as an ordinary user cannot write) are left out,
// and the ratio equals df's Use%.
func statfsUsage(path string) (Usage, error) {
	st, err := disk.Usage(path)
	if err != nil {
		return Usage{}, err
	}
	return Usage{
		CapacityBytes:  st.Used + st.Free,
		UsedBytes:      st.Used,
		AvailableBytes: st.Free,
		Basis:          CapacityFilesystem,
	}, nil
}
