package enforcer

import (
	"fmt"
)

// Action is what a band does.
type Action string

// Band actions (spec R3).
const (
	// ActionNone: nothing.
	ActionNone Action = "none"
	// ActionRetention: the broker's own retention (TTL) frees space; the
	// enforcer does nothing (R3.2 < 83%, R3.3).
	ActionRetention Action = "retention"
	// ActionScheduled: delete eligible segments once a day at the
	// configured time (R3.1 < 75%).
	ActionScheduled Action = "scheduled"
	// ActionPeriodic: delete eligible segments every pass until usage is
	// under the target (R3.1 75-85%).
	ActionPeriodic Action = "periodic"
	// ActionPurge: delete the oldest closed segments, chronologically
	// across partitions, expired or not, until usage is under the target
	// (R3.1 85-90%).
	ActionPurge Action = "purge"
	// ActionPurgeFraction: like purge, but at most Fraction of each
	// partition's messages per pass (R3.2 83-88%).
	ActionPurgeFraction Action = "purge_fraction"
	// ActionProtect: write protection (R3.1 >= 90%, R3.2 >= 88%). A protect
	// band also keeps freeing space with the nearest lower band's freeing
	// action, so usage can come back under the hysteresis bound.
	ActionProtect Action = "protect"
)

// frees reports whether the action deletes data to reach a target.
func (a Action) frees() bool {
	return a == ActionPeriodic || a == ActionPurge || a == ActionPurgeFraction
}

// Band is one usage band: [From, next band's From), ratios 0-1, lower bound
// inclusive.
type Band struct {
	Name     string
	From     float64
	Action   Action
	Target   float64 // ratio; freeing stops once usage < Target
	Fraction float64 // purge_fraction only
}

// Profile is a named list of bands, lowest first; the first starts at 0.
type Profile struct {
	Name  string
	Bands []Band
}

// CloudProfile is seed 003's profile for cloud storage (R3.1).
func CloudProfile() Profile {
	return Profile{Name: ProfileCloud, Bands: []Band{
		{Name: "scheduled", From: 0, Action: ActionScheduled},
		{Name: "periodic", From: 0.75, Action: ActionPeriodic, Target: 0.75},
		{Name: "purge", From: 0.85, Action: ActionPurge, Target: 0.85},
		{Name: "protect", From: 0.90, Action: ActionProtect},
	}}
}

// LocalProfile is seed 003's profile for local storage (R3.2).
func LocalProfile() Profile {
	return Profile{Name: ProfileLocal, Bands: []Band{
		{Name: "retention", From: 0, Action: ActionRetention},
		{Name: "purge_fraction", From: 0.83, Action: ActionPurgeFraction, Target: 0.83, Fraction: DefaultPurgeFraction},
		{Name: "protect", From: 0.88, Action: ActionProtect},
	}}
}

// ServerlessProfile: retention only, no disk bands (R3.3).
func ServerlessProfile() Profile {
	return Profile{Name: ProfileServerless, Bands: []Band{
		{Name: "retention", From: 0, Action: ActionRetention},
	}}
}

// Seed000Bands is seed 000's variant (R3.4) written as custom bands: the
// cloud profile without write protection.
func Seed000Bands() []BandConfig {
	return []BandConfig{
		{From: 0, Action: string(ActionScheduled)},
		{From: 85, Action: string(ActionPurge)},
	}
}

// ProfileFor returns the profile a (valid) configuration names.
func ProfileFor(cfg Config) (Profile, error) {
	cfg = cfg.WithDefaults()
	switch cfg.Profile {
	case ProfileCloud:
		return CloudProfile(), nil
	case ProfileLocal:
		return LocalProfile(), nil
	case ProfileServerless:
		return ServerlessProfile(), nil
	case ProfileCustom:
		bands, err := customBands(cfg.Bands)
		if err != nil {
			return Profile{}, err
		}
		return Profile{Name: ProfileCustom, Bands: bands}, nil
	}
	return Profile{}, fmt.Errorf("enforcer.profile: %q is not one of cloud, local, serverless, custom", cfg.Profile)
}

func customBands(cfgs []BandConfig) ([]Band, error) {
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("enforcer.bands: profile custom needs at least one band")
	}
	names := map[string]bool{}
	bands := make([]Band, 0, len(cfgs))
	for i, bc := range cfgs {
		field := fmt.Sprintf("enforcer.bands[%d]", i)
		a := Action(bc.Action)
		switch a {
		case ActionNone, ActionRetention, ActionScheduled, ActionPeriodic, ActionPurge, ActionPurgeFraction, ActionProtect:
		default:
			return nil, fmt.Errorf("%s.action: %q is not one of none, retention, scheduled, periodic, purge, purge_fraction, protect", field, bc.Action)
		}
		if bc.From < 0 || bc.From >= 100 {
			return nil, fmt.Errorf("%s.from: %v is outside [0, 100)", field, bc.From)
		}
		if i == 0 && bc.From != 0 {
			return nil, fmt.Errorf("%s.from: the first band must start at 0, not %v", field, bc.From)
		}
		if i > 0 && bc.From <= cfgs[i-1].From {
			return nil, fmt.Errorf("%s.from: %v is not above the previous band's %v", field, bc.From, cfgs[i-1].From)
		}
		b := Band{Name: bc.Name, From: bc.From / 100, Action: a}
		if b.Name == "" {
			b.Name = bc.Action
		}
		if names[b.Name] {
			return nil, fmt.Errorf("%s.name: %q is used by another band", field, b.Name)
		}
		names[b.Name] = true
		if bc.Target != nil {
			if !a.frees() {
				return nil, fmt.Errorf("%s.target: only periodic, purge and purge_fraction bands have a target", field)
			}
			if *bc.Target <= 0 || *bc.Target > bc.From {
				return nil, fmt.Errorf("%s.target: %v must be in (0, from=%v]", field, *bc.Target, bc.From)
			}
			b.Target = *bc.Target / 100
		} else if a.frees() {
			b.Target = b.From
		}
		if b.Target == 0 && a.frees() {
			return nil, fmt.Errorf("%s.target: a freeing band starting at 0 needs a target above 0", field)
		}
		if bc.Fraction != 0 && a != ActionPurgeFraction {
			return nil, fmt.Errorf("%s.fraction: only purge_fraction bands have a fraction", field)
		}
		if a == ActionPurgeFraction {
			b.Fraction = bc.Fraction
			if b.Fraction == 0 {
				b.Fraction = DefaultPurgeFraction
			}
			if b.Fraction < 0 || b.Fraction > 1 {
				return nil, fmt.Errorf("%s.fraction: %v is outside (0, 1]", field, bc.Fraction)
			}
		}
		bands = append(bands, b)
	}
	return bands, nil
}

// BandAt returns the index of the band usage ratio u falls in (lower
// bounds inclusive).
func (p Profile) BandAt(u float64) int {
	idx := 0
	for i, b := range p.Bands {
		if u >= b.From {
			idx = i
		}
	}
	return idx
}

// protectIndex is the index of the lowest protect band, -1 when none.
func (p Profile) protectIndex() int {
	for i, b := range p.Bands {
		if b.Action == ActionProtect {
			return i
		}
	}
	return -1
}

// freeingBand is the band whose freeing action applies at band i: band i
// itself when it frees, else for a protect band the nearest lower band
// that frees; -1 when none.
func (p Profile) freeingBand(i int) int {
	if p.Bands[i].Action.frees() {
		return i
	}
	if p.Bands[i].Action != ActionProtect {
		return -1
	}
	for j := i - 1; j >= 0; j-- {
		if p.Bands[j].Action.frees() {
			return j
		}
	}
	return -1
}
