//go:build race

package compat

// raceEnabled is true under the race detector, which makes Lua run many
// times slower.
const raceEnabled = true
