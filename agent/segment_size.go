package agent

// SegmentSize is segment i's size as Kafka counts it for size retention
// (LogSegment.size): its .log bytes, except for the active segment of a
// preallocated log (preallocate=true), whose file is created
// segment.bytes long: the bytes written (ActiveWrittenBytes).
func (p *Partition) SegmentSize(i int, preallocate bool) int64 {
	size := p.Segments[i].LogBytes
	if i == len(p.Segments)-1 && preallocate && p.ActiveWrittenBytes >= 0 && p.ActiveWrittenBytes < size {
		return p.ActiveWrittenBytes
	}
	return size
}

// LocalSize is the partition's local log size as Kafka counts it for
// size retention (UnifiedLog.size): the sum of its SegmentSize.
func (p *Partition) LocalSize(preallocate bool) int64 {
	var size int64
	for i := range p.Segments {
		size += p.SegmentSize(i, preallocate)
	}
	return size
}
