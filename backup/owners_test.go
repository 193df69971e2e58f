package backup

import (
	"errors"
	"os/user"
	"testing"
)

// A user database that could not be read is asked again next time; an ID
// that has no name is asked once.
func TestOwnerNamesCacheOnlyAnswers(t *testing.T) {
	o := newOwnerNames()
	calls := map[string]int{}
	failing := true
	o.lookupUser = func(id string) (string, error) {
		calls[id]++
		switch {
		case id == "4242":
			return "", user.UnknownUserIdError(4242)
		case failing:
			return "", errors.New("open /etc/passwd: too many open files")
		}
		return "alice", nil
	}
	if got := o.user(1000); got != "" {
		t.Errorf("a failed lookup gave %q", got)
	}
	failing = false
	if got := o.user(1000); got != "alice" {
		t.Errorf("after a failed lookup the name is %q, want it asked again: alice", got)
	}
	o.user(1000)
	o.user(4242)
	o.user(4242)
	if calls["1000"] != 2 || calls["4242"] != 1 {
		t.Errorf("lookups %v: want 1000 asked twice (a failure, then its name, cached) and 4242 once (no name, cached)", calls)
	}

	o.lookupGroup = func(id string) (string, error) { return "", user.UnknownGroupIdError(id) }
	o.group(7)
	o.lookupGroup = func(id string) (string, error) { return "staff", nil }
	if got := o.group(7); got != "" {
		t.Errorf("a group ID without a name was asked again: %q", got)
	}
}
