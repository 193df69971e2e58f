package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// KeepUnlimited as a count of a RetentionPolicy keeps every bucket (restic's -1).
const KeepUnlimited = -1

// The largest counts a RetentionPolicy accepts for daily, weekly and monthly: a year
// of days, five years of weeks and ten years of months (-1 is still allowed).
const (
	MaxKeepDaily   = 366
	MaxKeepWeekly  = 260
	MaxKeepMonthly = 120
)

// RetentionPolicy says which snapshots of a group retention keeps, with restic's
// meaning for each rule; a count of 0 turns its rule off and KeepUnlimited keeps
// every bucket.
type RetentionPolicy struct {
	Last    int              // the newest N snapshots
	Hourly  int              // the newest snapshot of each of the newest N clock hours that have one
	Daily   int              // the same for calendar days
	Weekly  int              // the same for ISO 8601 weeks
	Monthly int              // the same for calendar months
	Yearly  int              // the same for calendar years
	Within  CalendarDuration // every snapshot newer than this before the group's newest
	Tags    [][]string       // every snapshot carrying all the tags of any of these lists (restic's --keep-tag a,b)
}

// Validate checks a policy as restic checks forget's flags: every count is
// 0 or more, or KeepUnlimited, and a policy that keeps nothing is refused.
func (p RetentionPolicy) Validate() error {
	return p.validate(false)
}

// ValidateForJob checks a job's policy: as Validate, and the daily,
// weekly and monthly counts within MaxKeepDaily, MaxKeepWeekly and
// MaxKeepMonthly, so that no job keeps an unbounded or unreasonable
// history by a typo; unlimited is more than the limit and refused too.
func (p RetentionPolicy) ValidateForJob() error {
	return p.validate(true)
}

func (p RetentionPolicy) validate(limited bool) error {
	for _, rule := range p.counts() {
		if !limited {
			rule.max = 0
		}
		if rule.count < KeepUnlimited || (rule.max > 0 && (rule.count > rule.max || rule.count == KeepUnlimited)) {
			return fmt.Errorf("retention %s = %d is out of range: allowed %s", rule.name, rule.count, rule.allowed())
		}
	}
	if err := p.Within.validate(); err != nil {
		return fmt.Errorf("retention within: %w", err)
	}
	for _, list := range p.Tags {
		if len(list) == 0 || slices.ContainsFunc(list, func(tag string) bool { return strings.TrimSpace(tag) == "" }) {
			return errors.New("retention tag is empty: name a tag such as keep or monthly-audit")
		}
	}
	if p.keepsNothing() {
		return errors.New("retention policy keeps nothing: set at least one of last, hourly, daily, weekly, monthly, yearly, within or tag")
	}
	return nil
}

// String describes the policy for messages, such as "keep 7 daily, 4 weekly snapshots".
func (p RetentionPolicy) String() string {
	var parts []string
	for _, rule := range p.counts() {
		switch {
		case rule.count == KeepUnlimited:
			parts = append(parts, "all "+rule.name)
		case rule.count > 0:
			parts = append(parts, strconv.Itoa(rule.count)+" "+rule.name)
		}
	}
	var text string
	if len(parts) > 0 {
		text = strings.Join(parts, ", ") + " snapshots"
	}
	if !p.Within.IsZero() {
		text = joinClause(text, "all snapshots within "+p.Within.String()+" of the newest")
	}
	if len(p.Tags) > 0 {
		lists := make([]string, len(p.Tags))
		for i, list := range p.Tags {
			lists[i] = strings.Join(list, " and ")
		}
		text = joinClause(text, "all snapshots tagged "+strings.Join(lists, " or "))
	}
	if text == "" {
		return "keep nothing"
	}
	return "keep " + text
}

func joinClause(text, clause string) string {
	if text == "" {
		return clause
	}
	return text + " and " + clause
}

func (p RetentionPolicy) keepsNothing() bool {
	for _, rule := range p.counts() {
		if rule.count != 0 {
			return false
		}
	}
	return p.Within.IsZero() && len(p.Tags) == 0
}

// countRule is one of a policy's counted rules with its bucket of time.
type countRule struct {
	name   string
	reason KeepReason
	count  int
	max    int                               // the largest count a job may give (ValidateForJob); 0 for no limit
	bucket func(at time.Time, index int) int // equal for snapshots that share a bucket
}

func (r countRule) allowed() string {
	if r.max > 0 {
		return fmt.Sprintf("0 to %d", r.max)
	}
	return "0 or more, or -1 for unlimited"
}

// counts lists the counted rules in restic's order, newest-grained first.
func (p RetentionPolicy) counts() []countRule {
	return []countRule{
		{"last", ReasonLast, p.Last, 0, func(_ time.Time, index int) int { return index }},
		{"hourly", ReasonHourly, p.Hourly, 0, func(at time.Time, _ int) int {
			return ((at.Year()*100+int(at.Month()))*100+at.Day())*100 + at.Hour()
		}},
		{"daily", ReasonDaily, p.Daily, MaxKeepDaily, func(at time.Time, _ int) int {
			return (at.Year()*100+int(at.Month()))*100 + at.Day()
		}},
		{"weekly", ReasonWeekly, p.Weekly, MaxKeepWeekly, func(at time.Time, _ int) int {
			year, week := at.ISOWeek()
			return year*100 + week
		}},
		{"monthly", ReasonMonthly, p.Monthly, MaxKeepMonthly, func(at time.Time, _ int) int {
			return at.Year()*100 + int(at.Month())
		}},
		{"yearly", ReasonYearly, p.Yearly, 0, func(at time.Time, _ int) int { return at.Year() }},
	}
}

// CalendarDuration is a keep-within span in calendar units, such as 1y2m (restic's duration).
type CalendarDuration struct {
	Years, Months, Days, Hours int
}

// maxCalendarUnit bounds each number of a CalendarDuration (a million hours is 114 years).
const maxCalendarUnit = 1_000_000

const calendarDurationForms = "write whole numbers with units y (years), m (months), d (days) and h (hours), largest first, such as 30d, 1y2m or 2y5m7d3h"

// ParseCalendarDuration parses restic's keep-within form such as "30d", "1y2m" or "2y5m7d3h" (m is months).
func ParseCalendarDuration(text string) (CalendarDuration, error) {
	var d CalendarDuration
	rest := strings.TrimSpace(text)
	if rest == "" {
		return d, fmt.Errorf("duration is empty: %s", calendarDurationForms)
	}
	units := []struct {
		suffix string
		field  *int
	}{{"y", &d.Years}, {"m", &d.Months}, {"d", &d.Days}, {"h", &d.Hours}}
	next := 0 // index of the largest unit still allowed
	for rest != "" {
		digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		if digits == 0 {
			return CalendarDuration{}, fmt.Errorf("duration %q: %q is not a number: %s", text, string([]rune(rest)[0]), calendarDurationForms)
		}
		number := rest[:digits]
		rest = rest[digits:]
		letters := len(rest) - len(strings.TrimLeftFunc(rest, unicode.IsLetter))
		word := rest[:letters]
		unit := -1
		for i := range units {
			if word == units[i].suffix {
				unit = i
				break
			}
		}
		switch {
		case letters == 0:
			return CalendarDuration{}, fmt.Errorf("duration %q: %s has no unit: %s", text, number, calendarDurationForms)
		case unit < 0:
			return CalendarDuration{}, fmt.Errorf("duration %q: unit %q is unknown: %s", text, word, calendarDurationForms)
		case unit < next:
			return CalendarDuration{}, fmt.Errorf("duration %q: unit %s is repeated or out of order: %s", text, word, calendarDurationForms)
		}
		n, err := strconv.Atoi(number)
		if err != nil || n > maxCalendarUnit {
			return CalendarDuration{}, fmt.Errorf("duration %q: %s%s is too large: at most %d of a unit", text, number, word, maxCalendarUnit)
		}
		*units[unit].field = n
		rest = rest[letters:]
		next = unit + 1
	}
	if d.IsZero() {
		return CalendarDuration{}, fmt.Errorf("duration %q must be longer than zero", text)
	}
	return d, nil
}

// IsZero reports whether d is empty, which turns keep-within off.
func (d CalendarDuration) IsZero() bool {
	return d == CalendarDuration{}
}

// String writes d as ParseCalendarDuration reads it ("1y2m"); the zero duration is "0h".
func (d CalendarDuration) String() string {
	var b strings.Builder
	for _, part := range []struct {
		n    int
		unit string
	}{{d.Years, "y"}, {d.Months, "m"}, {d.Days, "d"}, {d.Hours, "h"}} {
		if part.n != 0 {
			b.WriteString(strconv.Itoa(part.n) + part.unit)
		}
	}
	if b.Len() == 0 {
		return "0h"
	}
	return b.String()
}

// Before returns the instant d before t: t's calendar date in t's zone moved
// back by the years, months and days (time.AddDate's normalisation: a
// month back from March 31 is March 2 or 3), then by the hours of elapsed time.
func (d CalendarDuration) Before(t time.Time) time.Time {
	return t.AddDate(-d.Years, -d.Months, -d.Days).Add(-time.Duration(d.Hours) * time.Hour)
}

func (d CalendarDuration) validate() error {
	for _, n := range []int{d.Years, d.Months, d.Days, d.Hours} {
		if n < 0 || n > maxCalendarUnit {
			return fmt.Errorf("duration %s is out of range: each unit allowed 0 to %d", d, maxCalendarUnit)
		}
	}
	return nil
}

// KeepReason is why retention keeps a snapshot; its string is what --dry-run and --json show.
type KeepReason string

// The reasons for keeping a snapshot, in the order a RetentionDecision lists them.
const (
	ReasonLast         KeepReason = "last"          // one of the newest Last snapshots
	ReasonHourly       KeepReason = "hourly"        // the newest of its clock hour, within the Hourly count
	ReasonDaily        KeepReason = "daily"         // the newest of its day, within the Daily count
	ReasonWeekly       KeepReason = "weekly"        // the newest of its ISO week, within the Weekly count
	ReasonMonthly      KeepReason = "monthly"       // the newest of its month, within the Monthly count
	ReasonYearly       KeepReason = "yearly"        // the newest of its year, within the Yearly count
	ReasonWithin       KeepReason = "within"        // newer than Within before the group's newest snapshot
	ReasonTag          KeepReason = "tag"           // carries one of the policy's tags
	ReasonPinned       KeepReason = "pinned"        // pinned: always kept
	ReasonNewest       KeepReason = "newest"        // the newest healthy snapshot of its group: always kept
	ReasonVerifyFailed KeepReason = "verify_failed" // its verification failed: kept, takes no part in the rules
)

// RetentionSnapshot is what retention knows of a snapshot: enough to group it and to decide on it.
type RetentionSnapshot struct {
	ID           string
	Time         time.Time
	Host         string
	Paths        []string
	Tags         []string
	Pinned       bool
	VerifyFailed bool
}

// RetentionDecision is the fate of one snapshot: kept with its reasons, or forgotten (Keep false, no reasons).
type RetentionDecision struct {
	Snapshot RetentionSnapshot
	Keep     bool
	Reasons  []KeepReason
}

var errNoZone = errors.New("retention needs a time zone to count its buckets in")

// DecideRetention applies the policy to the snapshots of one group, counting calendar
// buckets in loc, and returns a decision for every snapshot, newest first.
// Snapshots are ordered by time, equal times by ID (the greater ID counts as
// the newer). A snapshot whose verification failed is kept and takes no part:
// it fills no bucket, is not the newest and is not the reference of Within.
func DecideRetention(snapshots []RetentionSnapshot, p RetentionPolicy, loc *time.Location) ([]RetentionDecision, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if loc == nil {
		return nil, errNoZone
	}
	ordered := slices.Clone(snapshots)
	slices.SortStableFunc(ordered, func(a, b RetentionSnapshot) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})

	decisions := make([]RetentionDecision, len(ordered))
	var healthy []int // indexes into ordered of the snapshots that take part, newest first
	for i, s := range ordered {
		decisions[i].Snapshot = s
		if !s.VerifyFailed {
			healthy = append(healthy, i)
		}
	}

	rules := p.counts()
	remaining := make([]int, len(rules))
	previous := make([]int, len(rules))
	for r, rule := range rules {
		remaining[r] = rule.count
	}
	useWithin := len(healthy) > 0 && !p.Within.IsZero()
	var cutoff time.Time
	if useWithin {
		cutoff = p.Within.Before(ordered[healthy[0]].Time.In(loc))
	}
	for n, i := range healthy {
		s := ordered[i]
		local := s.Time.In(loc)
		var reasons []KeepReason
		oldest := n == len(healthy)-1
		for r, rule := range rules {
			if remaining[r] == 0 {
				continue
			}
			// A bucket not seen before is kept; so is the oldest snapshot
			// while the count is not used up (restic keeps it to lengthen
			// the history it keeps).
			value := rule.bucket(local, n)
			if n > 0 && value == previous[r] && !oldest {
				continue
			}
			previous[r] = value
			if remaining[r] > 0 {
				remaining[r]--
			}
			reasons = append(reasons, rule.reason)
		}
		if useWithin && s.Time.After(cutoff) {
			reasons = append(reasons, ReasonWithin)
		}
		if hasAllTagsOfAny(s.Tags, p.Tags) {
			reasons = append(reasons, ReasonTag)
		}
		decisions[i].Reasons = reasons
	}
	for i, s := range ordered {
		if s.Pinned {
			decisions[i].Reasons = append(decisions[i].Reasons, ReasonPinned)
		}
		if len(healthy) > 0 && i == healthy[0] {
			decisions[i].Reasons = append(decisions[i].Reasons, ReasonNewest)
		}
		if s.VerifyFailed {
			decisions[i].Reasons = append(decisions[i].Reasons, ReasonVerifyFailed)
		}
		decisions[i].Keep = len(decisions[i].Reasons) > 0
	}
	return decisions, nil
}

// hasAllTagsOfAny reports whether tags hold every tag of at least one of
// lists.
func hasAllTagsOfAny(tags []string, lists [][]string) bool {
	return slices.ContainsFunc(lists, func(list []string) bool {
		return !slices.ContainsFunc(list, func(t string) bool { return !slices.Contains(tags, t) })
	})
}
