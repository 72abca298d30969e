package main

import (
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/forecast"
)

// forecastBands are the bands of the enforcer's profile the foresight
// metrics give a time to (spec R3.8); none when the profile is invalid
// (the enforcer refuses it).
func forecastBands(cfg enforcer.Config) []forecast.Band {
	p, err := enforcer.ProfileFor(cfg)
	if err != nil {
		return nil
	}
	out := make([]forecast.Band, 0, len(p.Bands))
	for _, b := range p.Bands {
		if b.From > 0 {
			out = append(out, forecast.Band{Name: b.Name, From: b.From})
		}
	}
	return out
}
