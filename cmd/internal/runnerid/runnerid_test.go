package runnerid

import "testing"

func TestStringAndParseRoundTrip(t *testing.T) {
	for _, id := range []ID{
		{Host: "h", PID: 42},
		{Host: "db-1.example", PID: 7, Boot: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", PIDNS: "4026531836", Start: 123456},
		{Host: "mac", PID: 9, Boot: "B00T", Start: 1},
	} {
		got, ok := Parse(id.String())
		if !ok || got != id {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", id.String(), got, ok, id)
		}
	}
	for _, bad := range []string{"", "host", ":1", "h:x", "h:0", "h:1@a/b", "h:1@a/b/c"} {
		if _, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// Only a runner of this host, boot and PID namespace can be judged dead
// from here: when its PID is gone or now belongs to a process that started
// at another time.
func TestDead(t *testing.T) {
	self := ID{Host: "h", PID: 1, Boot: "boot-a", PIDNS: "ns-a", Start: 10}
	probe := Prober{
		Gone:      func(pid int) bool { return pid == 666 },
		StartTime: func(pid int) uint64 { return map[int]uint64{100: 50}[pid] },
	}
	cases := []struct {
		name  string
		other ID
		dead  bool
	}{
		{"this host and boot, process gone", ID{Host: "h", PID: 666, Boot: "boot-a", PIDNS: "ns-a", Start: 5}, true},
		{"this host and boot, PID reused by a later process", ID{Host: "h", PID: 100, Boot: "boot-a", PIDNS: "ns-a", Start: 20}, true},
		{"this host and boot, the same process", ID{Host: "h", PID: 100, Boot: "boot-a", PIDNS: "ns-a", Start: 50}, false},
		{"another boot (a container of the same name elsewhere): its lease decides", ID{Host: "h", PID: 666, Boot: "boot-b", PIDNS: "ns-a", Start: 5}, false},
		{"another PID namespace (a container on this host): its lease decides", ID{Host: "h", PID: 666, Boot: "boot-a", PIDNS: "ns-b", Start: 5}, false},
		{"another host", ID{Host: "g", PID: 666, Boot: "boot-a", PIDNS: "ns-a", Start: 5}, false},
		{"itself", self, false},
	}
	for _, tc := range cases {
		if got := self.Dead(tc.other.String(), probe); got != tc.dead {
			t.Errorf("%s: Dead = %v, want %v", tc.name, got, tc.dead)
		}
	}
	if self.Dead("not an id", probe) {
		t.Error("an unparsable runner is taken for dead")
	}
	// A runner of an older nightjar ("host:pid") on a system that knows no
	// boot ID is judged by its PID, as before.
	old := ID{Host: "h", PID: 1}
	if !old.Dead("h:666", probe) || old.Dead("h:100", probe) {
		t.Error("legacy host:pid runners are not judged by their PID")
	}
}
