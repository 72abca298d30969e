package enforcer

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestProfileBands(t *testing.T) {
	seed000, err := ProfileFor(Config{Profile: ProfileCustom, Bands: Seed000Bands()})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		rule    string
		profile Profile
		usage   float64
		band    string
		action  Action
	}{
		{"R3.1/cloud below 75% is the scheduled band", CloudProfile(), 0, "scheduled", ActionScheduled},
		{"R3.1/cloud 74.99% is still scheduled", CloudProfile(), 0.7499, "scheduled", ActionScheduled},
		{"R3.1/cloud 75% lower bound inclusive is periodic", CloudProfile(), 0.75, "periodic", ActionPeriodic},
		{"R3.1/cloud 84.99% is periodic", CloudProfile(), 0.8499, "periodic", ActionPeriodic},
		{"R3.1/cloud 85% is purge", CloudProfile(), 0.85, "purge", ActionPurge},
		{"R3.1/cloud 89.99% is purge", CloudProfile(), 0.8999, "purge", ActionPurge},
		{"R3.1/cloud 90% is protect", CloudProfile(), 0.90, "protect", ActionProtect},
		{"R3.1/cloud 100% is protect", CloudProfile(), 1, "protect", ActionProtect},
		{"R3.2/local 82.99% is retention", LocalProfile(), 0.8299, "retention", ActionRetention},
		{"R3.2/local 83% is purge_fraction", LocalProfile(), 0.83, "purge_fraction", ActionPurgeFraction},
		{"R3.2/local 87.99% is purge_fraction", LocalProfile(), 0.8799, "purge_fraction", ActionPurgeFraction},
		{"R3.2/local 88% is protect", LocalProfile(), 0.88, "protect", ActionProtect},
		{"R3.3/serverless 99% is retention only", ServerlessProfile(), 0.99, "retention", ActionRetention},
		{"R3.3/serverless 0% is retention", ServerlessProfile(), 0, "retention", ActionRetention},
		{"R3.4/seed 000 below 75% daily", seed000, 0.70, "scheduled", ActionScheduled},
		{"R3.4/seed 000 84.99% still scheduled", seed000, 0.8499, "scheduled", ActionScheduled},
		{"R3.4/seed 000 85% purges oldest first", seed000, 0.85, "purge", ActionPurge},
		{"R3.4/seed 000 99% purges, no protection", seed000, 0.99, "purge", ActionPurge},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			b := c.profile.Bands[c.profile.BandAt(c.usage)]
			if b.Name != c.band || b.Action != c.action {
				t.Fatalf("usage %v: band %s/%s, want %s/%s", c.usage, b.Name, b.Action, c.band, c.action)
			}
		})
	}
	t.Run("R3.4/seed 000 has no protect band", func(t *testing.T) {
		if seed000.protectIndex() != -1 {
			t.Fatal("seed 000's variant must not protect")
		}
		if seed000.Bands[1].Target != 0.85 {
			t.Fatalf("purge target %v, want 0.85", seed000.Bands[1].Target)
		}
	})
	t.Run("R3.2/local purge fraction is 10%", func(t *testing.T) {
		if f := LocalProfile().Bands[1].Fraction; f != 0.10 {
			t.Fatalf("fraction %v", f)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name  string
		cfg   Config
		field string // "" = valid
	}{
		{"R4.4/defaults are valid", Config{}, ""},
		{"R3.1/cloud", Config{Profile: "cloud"}, ""},
		{"R3.4/seed 000 as custom", Config{Profile: "custom", Bands: Seed000Bands()}, ""},
		{"R6/unknown profile", Config{Profile: "fast"}, "enforcer.profile"},
		{"R6/bands without custom", Config{Profile: "cloud", Bands: Seed000Bands()}, "enforcer.bands"},
		{"R6/custom without bands", Config{Profile: "custom"}, "enforcer.bands"},
		{"R6/first band not at 0", Config{Profile: "custom", Bands: []BandConfig{{From: 10, Action: "scheduled"}}}, "enforcer.bands[0].from"},
		{"R6/bands not increasing", Config{Profile: "custom", Bands: []BandConfig{{From: 0, Action: "scheduled"}, {From: 80, Action: "purge"}, {From: 80, Action: "protect"}}}, "enforcer.bands[2].from"},
		{"R6/unknown action", Config{Profile: "custom", Bands: []BandConfig{{From: 0, Action: "explode"}}}, "enforcer.bands[0].action"},
		{"R6/target above from", Config{Profile: "custom", Bands: []BandConfig{{From: 0, Action: "none"}, {From: 80, Action: "purge", Target: f(90)}}}, "enforcer.bands[1].target"},
		{"R6/target on protect", Config{Profile: "custom", Bands: []BandConfig{{From: 0, Action: "none"}, {From: 80, Action: "protect", Target: f(70)}}}, "enforcer.bands[1].target"},
		{"R6/fraction out of range", Config{Profile: "custom", Bands: []BandConfig{{From: 0, Action: "none"}, {From: 80, Action: "purge_fraction", Fraction: 2}}}, "enforcer.bands[1].fraction"},
		{"R6/freeing band at 0 without target", Config{Profile: "custom", Bands: []BandConfig{{From: 0, Action: "purge"}}}, "enforcer.bands[0].target"},
		{"R6/duplicate names", Config{Profile: "custom", Bands: []BandConfig{{Name: "x", From: 0, Action: "none"}, {Name: "x", From: 80, Action: "purge"}}}, "enforcer.bands[1].name"},
		{"R6/bad schedule time", Config{Schedule: ScheduleConfig{Time: "4am"}}, "enforcer.schedule.time"},
		{"R6/bad minute", Config{Schedule: ScheduleConfig{Time: "04:60"}}, "enforcer.schedule.time"},
		{"R6/bad timezone", Config{Schedule: ScheduleConfig{Timezone: "Mars/Olympus"}}, "enforcer.schedule.timezone"},
		{"R6/bad strategy", Config{Protection: ProtectionConfig{Strategy: "shout"}}, "enforcer.protection.strategy"},
		{"R6/negative hysteresis", Config{HysteresisPoints: -1}, "enforcer.hysteresisPoints"},
		{"R6/negative max actions", Config{MaxActionsPerInterval: -1}, "enforcer.maxActionsPerInterval"},
		{"R6/negative interval", Config{Interval: -time.Second}, "enforcer.interval"},
		{"R6/negative staleAfter", Config{StaleAfter: -time.Second}, "enforcer.staleAfter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatalf("valid config refused: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.field+":") {
				t.Fatalf("error %v, want one naming %s", err, c.field)
			}
		})
	}
}

func TestConfigYAML(t *testing.T) {
	const doc = `
enforcer:
  enabled: true
  profile: custom
  bands:
    - {from: 0, action: scheduled}
    - {from: 85, action: purge}
  schedule: {time: "03:30", timezone: Europe/Madrid}
  hysteresisPoints: 4
  protection: {strategy: quota, producerByteRate: 2048}
  maxActionsPerInterval: 7
  interval: 5s
  staleAfter: 1m
`
	var file struct {
		Enforcer Config `yaml:"enforcer"`
	}
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		t.Fatal(err)
	}
	c := file.Enforcer
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !c.Enabled || c.Profile != "custom" || len(c.Bands) != 2 || c.Schedule.Time != "03:30" || c.HysteresisPoints != 4 ||
		c.Protection.Strategy != "quota" || c.Protection.ProducerByteRate != 2048 || c.MaxActionsPerInterval != 7 ||
		c.Interval != 5*time.Second || c.StaleAfter != time.Minute {
		t.Fatalf("decoded %+v", c)
	}
	t.Run("R6/unknown field refused", func(t *testing.T) {
		dec := yaml.NewDecoder(strings.NewReader("enforcer:\n  enabeld: true\n"))
		dec.KnownFields(true)
		if err := dec.Decode(&file); err == nil || !strings.Contains(err.Error(), "enabeld") {
			t.Fatalf("error %v, want one naming enabeld", err)
		}
	})
	t.Run("R4.4/default is observe mode", func(t *testing.T) {
		if (Config{}).WithDefaults().Enabled {
			t.Fatal("enforcement on by default")
		}
	})
}
