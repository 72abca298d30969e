//go:build race

package simulation

// raceEnabled: under the race detector (scripts/test.sh's unit pass) TestSim
// runs 30 seeds; scripts/test.sh runs the full count without it.
const raceEnabled = true
