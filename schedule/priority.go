package schedule

import (
	"slices"
	"time"
)

// Priority scores: a level's base score, and what waiting adds to it.
const (
	PriorityAgingPerHour = 50.0  // points added per hour of waiting
	PriorityMaxAging     = 100.0 // most points waiting adds: one level up at most
)

// PriorityLevels are the priority levels, lowest first: the one list the
// config, the pass and the state database's schema check against.
var PriorityLevels = []string{"low", "normal", "high", "critical"}

// DefaultPriority is the level of a job that names none.
const DefaultPriority = "normal"

// priorityStep is the base score between two neighbouring levels.
const priorityStep = 100.0

// EffectivePriority returns the score a run of priority level has after waiting waited: the level's base score (its place in PriorityLevels × 100: low 0, normal 100, high 200, critical 300; an unknown level counts as DefaultPriority) plus 50 points per hour waited, at most 100.
func EffectivePriority(level string, waited time.Duration) float64 {
	i := slices.Index(PriorityLevels, level)
	if i < 0 {
		i = slices.Index(PriorityLevels, DefaultPriority)
	}
	base := float64(i) * priorityStep
	if waited <= 0 {
		return base
	}
	return base + min(waited.Hours()*PriorityAgingPerHour, PriorityMaxAging)
}
