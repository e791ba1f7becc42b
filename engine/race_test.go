//go:build race

package engine

// raceEnabled reports a build with the race detector, which slows the
// heaviest measurements down tenfold.
const raceEnabled = true
