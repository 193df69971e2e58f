package runnerid

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/nightjar-backup/nightjar/hostid"
)

// ID identifies one scheduler process.
type ID struct {
	Host  string
	PID   int
	Boot  string // the boot ID ("": unknown here)
	PIDNS string // the PID namespace ("": none or unknown)
	Start uint64 // the process's start time, in the system's own unit (0: unknown)
}

// Self is the ID of this process.
func Self() ID {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	pid := os.Getpid()
	return ID{Host: host, PID: pid, Boot: hostid.BootID(), PIDNS: pidNamespaceNumber(), Start: startTime(pid)}
}

// pidNamespaceNumber is the inode number of this process's PID namespace
// ("4026531836" of "pid:[4026531836]"): a runner ID keeps only the number,
// since "/" and "@" separate its parts.
func pidNamespaceNumber() string {
	return strings.TrimSuffix(strings.TrimPrefix(hostid.PIDNamespace(), "pid:["), "]")
}

// String is "host:pid" followed, where known, by "@boot/pidns/start".
func (id ID) String() string {
	s := id.Host + ":" + strconv.Itoa(id.PID)
	if id.Boot == "" && id.PIDNS == "" && id.Start == 0 {
		return s
	}
	return fmt.Sprintf("%s@%s/%s/%d", s, id.Boot, id.PIDNS, id.Start)
}

// Parse reads an ID written by String, and the "host:pid" of older
// versions; ok is false for anything else.
func Parse(s string) (id ID, ok bool) {
	host, rest, found := strings.Cut(s, ":")
	if !found || host == "" {
		return ID{}, false
	}
	pidText, extra, hasExtra := strings.Cut(rest, "@")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return ID{}, false
	}
	id = ID{Host: host, PID: pid}
	if !hasExtra {
		return id, true
	}
	parts := strings.Split(extra, "/")
	if len(parts) != 3 {
		return ID{}, false
	}
	start, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return ID{}, false
	}
	id.Boot, id.PIDNS, id.Start = parts[0], parts[1], start
	return id, true
}

// Prober answers whether a process of this system is gone, and when one
// started; Local is the system's own.
type Prober struct {
	Gone      func(pid int) bool
	StartTime func(pid int) uint64 // 0: unknown
}

// Dead reports whether other, a runner, is provably gone as seen from
// self: it ran on this host, in this boot and PID namespace, and its
// process is gone or its PID now belongs to a process started at another
// time. Anything else (another host, boot or namespace, an unparsable ID)
// is not provably dead: its lease decides.
func (self ID) Dead(other string, probe Prober) bool {
	o, ok := Parse(other)
	if !ok || o.Host != self.Host || o.Boot != self.Boot || o.PIDNS != self.PIDNS {
		return false
	}
	if o == self {
		return false
	}
	if probe.Gone(o.PID) {
		return true
	}
	if o.Start == 0 || probe.StartTime == nil {
		return false
	}
	now := probe.StartTime(o.PID)
	return now != 0 && now != o.Start
}

// StartTime is when process pid started, in the system's own unit; 0 when
// it is unknown here or there is no such process.
func StartTime(pid int) uint64 { return startTime(pid) }
