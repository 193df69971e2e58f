package schedule

import (
	"testing"
	"time"
)

func TestEffectivePriority(t *testing.T) {
	cases := []struct {
		name   string
		level  string
		waited time.Duration
		want   float64
	}{
		{"low, fresh", "low", 0, 0},
		{"normal, fresh", "normal", 0, 100},
		{"high, fresh", "high", 0, 200},
		{"critical, fresh", "critical", 0, 300},
		{"unknown counts as normal", "urgent", 0, 100},
		{"empty counts as normal", "", 0, 100},
		{"half an hour adds 25", "normal", 30 * time.Minute, 125},
		{"one hour adds 50", "low", time.Hour, 50},
		{"two hours add 100: one level up", "normal", 2 * time.Hour, 200},
		{"aging is capped at 100", "normal", 30 * time.Hour, 200},
		{"an aged low never reaches critical", "low", 1000 * time.Hour, 100},
		{"an aged high ties a fresh critical", "high", 5 * time.Hour, 300},
		{"a negative wait (clock skew) adds nothing", "high", -time.Hour, 200},
		{"aging applies to an unknown level too", "bogus", time.Hour, 150},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := EffectivePriority(c.level, c.waited); got != c.want {
				t.Errorf("EffectivePriority(%q, %s) = %v, want %v", c.level, c.waited, got, c.want)
			}
		})
	}
}

func TestEffectivePriorityNeverSkipsALevel(t *testing.T) {
	levels := []string{"low", "normal", "high", "critical"}
	for i, level := range levels[:len(levels)-2] {
		aged := EffectivePriority(level, 100*time.Hour)
		if two := EffectivePriority(levels[i+2], 0); aged >= two {
			t.Errorf("%s aged %v reaches fresh %s %v", level, aged, levels[i+2], two)
		}
	}
}
