package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/forecast"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/human"
)

// projectionReport is a log dir's projection (spec R3.8) as scan reports
// it: from the ingress of the data the log dir retains (a one-shot scan
// sees no appends; forecast.HistoryRates).
type projectionReport struct {
	// UsageRatio is the projected steady-state usage; null when Unbounded.
	UsageRatio *float64 `json:"usage_ratio"`
	Unbounded  bool     `json:"unbounded,omitempty"`
	// IngressBytesPerSecond is the estimated ingress of the log dir.
	IngressBytesPerSecond float64 `json:"ingress_bytes_per_second"`
	// UnestimatedTopics are projected at their current size.
	UnestimatedTopics int `json:"unestimated_topics"`
	// TimeToBandSeconds: per band usage reaches, the seconds until it does.
	TimeToBandSeconds map[string]float64 `json:"time_to_band_seconds"`
}

// projections projects every readable log dir of snap, by path.
func projections(snap *agent.Snapshot, bands []forecast.Band) map[string]*projectionReport {
	out := map[string]*projectionReport{}
	for _, d := range forecast.Project(snap, forecast.HistoryRates(snap)) {
		if !d.Known {
			continue
		}
		p := &projectionReport{IngressBytesPerSecond: d.IngressBytesPerSecond, UnestimatedTopics: d.Unestimated,
			TimeToBandSeconds: map[string]float64{}}
		if r := d.ProjectedRatio(); math.IsInf(r, 1) {
			p.Unbounded = true
		} else {
			p.UsageRatio = &r
		}
		for _, b := range bands {
			if t, ok := d.TimeTo(b.From); ok {
				p.TimeToBandSeconds[b.Name] = math.Round(t.Seconds())
			}
		}
		out[d.Path] = p
	}
	return out
}

// projectionText is the table's line for a log dir's projection.
func projectionText(p *projectionReport, bands []forecast.Band) string {
	var b strings.Builder
	if p.Unbounded {
		b.WriteString("  projection: unbounded (a topic with ingress has no retention)")
	} else {
		fmt.Fprintf(&b, "  projection: %.1f%% once retention catches up", 100**p.UsageRatio)
	}
	fmt.Fprintf(&b, " at the retained data's ingress (%s/s", human.Bytes(int64(p.IngressBytesPerSecond)))
	if p.UnestimatedTopics > 0 {
		fmt.Fprintf(&b, "; %d topic(s) without an estimate, kept at their size", p.UnestimatedTopics)
	}
	b.WriteString(")")
	var times []string
	for _, band := range bands {
		s, ok := p.TimeToBandSeconds[band.Name]
		switch {
		case !ok:
			times = append(times, fmt.Sprintf("%s (%.4g%%) not reached", band.Name, 100*band.From))
		case s == 0:
			times = append(times, fmt.Sprintf("%s (%.4g%%) now", band.Name, 100*band.From))
		default:
			times = append(times, fmt.Sprintf("%s (%.4g%%) in %s", band.Name, 100*band.From, time.Duration(s)*time.Second))
		}
	}
	if len(times) > 0 {
		b.WriteString("; " + strings.Join(times, ", "))
	}
	return b.String() + "\n"
}
