package simulation

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	seedFlag  = flag.Int64("seed", -1, "run this one seed (replay), verbosely")
	seedsFlag = flag.Int("seeds", 0, "how many seeds TestSim runs (default 2000; -short 50; -race 30)")
	firstFlag = flag.Int64("first", 1, "the first seed TestSim runs")
	soakFlag  = flag.Duration("soak", 0, "run seeds for this long (a long soak), from -first on")
	mixFlag   = flag.String("mix", "", "fault and operator classes, comma-separated (default: DefaultMix; all: every class)")
	stepsFlag = flag.Int("steps", 0, "steps with faults per seed (default 90)")
)

func mix(t *testing.T) []Class {
	switch *mixFlag {
	case "":
		return DefaultMix
	case "all":
		return AllClasses
	}
	var out []Class
	for _, c := range strings.Split(*mixFlag, ",") {
		out = append(out, Class(strings.TrimSpace(c)))
	}
	return out
}

func replay(seed int64) string {
	cmd := fmt.Sprintf("go test ./internal/simulation -run 'TestSim$' -seed=%d -v", seed)
	if *mixFlag != "" {
		cmd += " -mix=" + *mixFlag
	}
	if *stepsFlag != 0 {
		cmd += fmt.Sprintf(" -steps=%d", *stepsFlag)
	}
	return cmd
}

// TestSim runs the simulation over many seeds (one with -seed, for as
// long as -soak says): every invariant after every step.
func TestSim(t *testing.T) {
	classes := mix(t)
	if *seedFlag >= 0 {
		opts := Options{Seed: *seedFlag, Classes: classes, Steps: *stepsFlag}
		if testing.Verbose() {
			opts.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
		}
		if f := Run(opts); f != nil {
			t.Fatalf("%v\n%s\nreplay: %s", f, strings.Join(f.Trace, "\n"), replay(f.Seed))
		}
		return
	}
	n := *seedsFlag
	if n == 0 {
		n = 2000
		if testing.Short() || raceEnabled {
			// The quick loop; and under -race (one goroutine per seed:
			// the race detector has little to find and costs 5-10x),
			// scripts/test.sh runs the full count in a pass of its own.
			n = 50
			if raceEnabled {
				n = 30
			}
		}
	}
	// Seeds are independent: one worker per CPU, each seed on one
	// goroutine, so every seed replays alone exactly as it ran here.
	begin := time.Now()
	var (
		mu    sync.Mutex
		next  = *firstFlag
		ran   int
		first *Failure
	)
	take := func() (int64, bool) {
		mu.Lock()
		defer mu.Unlock()
		if first != nil || *soakFlag > 0 && time.Since(begin) > *soakFlag || *soakFlag == 0 && next >= *firstFlag+int64(n) {
			return 0, false
		}
		next++
		ran++
		return next - 1, true
	}
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for seed, ok := take(); ok; seed, ok = take() {
				if f := Run(Options{Seed: seed, Classes: classes, Steps: *stepsFlag}); f != nil {
					mu.Lock()
					if first == nil || f.Seed < first.Seed {
						first = f
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if f := first; f != nil {
		t.Fatalf("%v\nlast events:\n%s\nreplay: %s", f, strings.Join(f.Trace[max(0, len(f.Trace)-25):], "\n"), replay(f.Seed))
	}
	d := time.Since(begin)
	t.Logf("%d seeds in %s: %.1f seeds/s", ran, d.Round(time.Millisecond), float64(ran)/d.Seconds())
}

// TestEveryClassRunsOrIsKnownBroken: a class of AllClasses is in
// DefaultMix (go test runs it) or in KnownBroken (the bug it finds is
// named and checked), never in neither or both.
func TestEveryClassRunsOrIsKnownBroken(t *testing.T) {
	for _, c := range AllClasses {
		_, known := KnownBroken[c]
		if run := slices.Contains(DefaultMix, c); run == known {
			t.Errorf("class %s: in DefaultMix %v, in KnownBroken %v: want exactly one", c, run, known)
		}
	}
	for c := range KnownBroken {
		if !slices.Contains(AllClasses, c) {
			t.Errorf("KnownBroken names %s, which is not in AllClasses", c)
		}
	}
}

// TestSimFindsKnownBugs: each class left out of DefaultMix still breaks
// the invariant KnownBroken names, at its seed or one of the knownWindow
// seeds after it (another change to the enforcer moves which seed finds a
// bug first): the simulator finds the bug on today's ledger. When this
// fails for a class, the ledger's fix has landed: move the class into
// DefaultMix and delete its entry. It searches up to knownWindow seeds
// for each entry (seconds), so the quick loop (-short) leaves it to the
// full run: scripts/test.sh runs it without -short twice, in the unit
// pass (-race) and in the simulation's 2,000-seed pass.
func TestSimFindsKnownBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("searches up to 200 seeds a class: the full run (without -short) checks it")
	}
	const knownWindow = 200
	for c, k := range KnownBroken {
		var got *Failure
		found := int64(-1)
		for seed := k.Seed; seed < k.Seed+knownWindow && found < 0; seed++ {
			got = Run(Options{Seed: seed, Classes: append([]Class{Disk, c}, k.Also...)})
			if got != nil && got.Invariant == k.Invariant {
				found = seed
			}
		}
		switch {
		case found < 0:
			t.Errorf("%s (%s): the simulator no longer finds it in seeds %d-%d (last: %v): if the fix has landed, move %s into DefaultMix",
				c, k.What, k.Seed, k.Seed+knownWindow-1, got, c)
		case found != k.Seed:
			t.Logf("%s: found at seed %d (recorded %d)", c, found, k.Seed)
		}
	}
}
