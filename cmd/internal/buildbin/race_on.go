//go:build race

package buildbin

// raceDetector tells whether this test binary runs under the race
// detector.
const raceDetector = true
