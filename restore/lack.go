package restore

import "errors"

// Lack is something a snapshot holds that the platform restored on cannot
// have, such as owners on Windows: restore names it once, counts the
// entries that lost it, and carries on.
type Lack struct {
	What    string `json:"what"`
	Reason  string `json:"reason"`
	Entries int64  `json:"entries"` // the entries (extended attributes: the attributes) that lost it; 0: all, the platform has none
}

// lackError is an FS's answer for something its platform cannot do at
// all; the restorer turns it into a Lack.
type lackError struct{ what, reason string }

func (e *lackError) Error() string { return e.what + ": " + e.reason }
func (e *lackError) Unwrap() error { return errors.ErrUnsupported }

// LackOwners is the Lack of owners and groups, on Windows.
const LackOwners = "owners and groups"

// HasLack tells whether the restore named what (a Lack's What) as
// something the platform does not have.
func (r *Result) HasLack(what string) bool {
	for _, l := range r.Lacks {
		if l.What == what {
			return true
		}
	}
	return false
}

// lacking records err, if it is a lackError, as one more entry that lost
// what it names, and tells whether it was one.
func (rs *restorer) lacking(err error) bool {
	var l *lackError
	if !errors.As(err, &l) {
		return false
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i := range rs.result.Lacks {
		if rs.result.Lacks[i].What == l.what {
			rs.result.Lacks[i].Entries++
			return true
		}
	}
	rs.result.Lacks = append(rs.result.Lacks, Lack{What: l.what, Reason: l.reason, Entries: 1})
	return true
}
