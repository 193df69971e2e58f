package schedule

import "time"

// Priority scores: a level's base score, and what waiting adds to it.
const (
	PriorityAgingPerHour = 50.0  // points added per hour of waiting
	PriorityMaxAging     = 100.0 // most points waiting adds: one level up at most
)

// priorityBase is the base score of each priority level.
var priorityBase = map[string]float64{"low": 0, "normal": 100, "high": 200, "critical": 300}

// EffectivePriority returns the score a run of priority level has after waiting waited: the level's base score (low 0, normal 100, high 200, critical 300; an unknown level counts as normal) plus 50 points per hour waited, at most 100.
func EffectivePriority(level string, waited time.Duration) float64 {
	base, ok := priorityBase[level]
	if !ok {
		base = priorityBase["normal"]
	}
	if waited <= 0 {
		return base
	}
	return base + min(waited.Hours()*PriorityAgingPerHour, PriorityMaxAging)
}
