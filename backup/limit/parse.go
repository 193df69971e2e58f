package limit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxRate is the largest rate ParseRate accepts, in bytes per second (1 TB/s).
const MaxRate = 1_000_000_000_000

// ErrInvalidRate reports a bandwidth that ParseRate rejects.
var ErrInvalidRate = errors.New("invalid bandwidth")

// allowed is what every ParseRate error about the form of a rate suggests.
const allowed = "want a positive number with a unit such as 50MB, 50MB/s, 400Mbit or 512KiB"

// noUnit is the error of a number without a unit: it names the units.
const noUnit = "a number needs a unit: B (bytes) or bit, after an optional k, M, G, T, Ki, Mi, Gi or Ti, such as 50MB or 400Mbit"

// prefixes maps a lowercase prefix to its multiplier and usual spelling.
var prefixes = map[string]struct {
	mult float64
	name string
}{
	"":   {1, ""},
	"k":  {1e3, "k"},
	"m":  {1e6, "M"},
	"g":  {1e9, "G"},
	"t":  {1e12, "T"},
	"ki": {1 << 10, "Ki"},
	"mi": {1 << 20, "Mi"},
	"gi": {1 << 30, "Gi"},
	"ti": {1 << 40, "Ti"},
}

// ParseRate returns the bytes per second of a bandwidth written as a number,
// an optional prefix, an optional unit and an optional "/s":
//
//   - The number is decimal, with "." or "," as the decimal separator (1.5MB,
//     1,5MB). A comma followed by exactly three digits, as in 1,500MB, is
//     rejected: it may be a thousands separator.
//   - The prefixes k, M, G, T mean 1000^n and Ki, Mi, Gi, Ti mean 1024^n; the
//     prefix letters are case-insensitive (kB and KB, KiB and KIB).
//   - The unit B, byte or bytes means bytes; bit or bits means bits, so 400Mbit
//     is 50 000 000 bytes per second. Mbps (lowercase b) means megabits and
//     MBps megabytes per second. A lone lowercase b, as in 50Mb or 50mb, is
//     rejected because operators write it for both bits and bytes.
//   - A unit is required: 4096 or 100k alone is refused (noUnit names the
//     units), since readers differ on what a bare number or prefix means
//     (bytes, KiB as restic's --limit-upload, 100 KiB as curl's 100k).
//   - "/s" or "/sec" may follow and changes nothing: every rate is per second.
//
// Spaces around the number and the unit are ignored. The result must be at
// least 1 byte per second and at most MaxRate; anything else is an error
// wrapping ErrInvalidRate that names s.
func ParseRate(s string) (int64, error) {
	fail := func(why string) (int64, error) {
		return 0, fmt.Errorf("%w %q: %s", ErrInvalidRate, s, why)
	}
	in := strings.TrimSpace(s)

	i := 0
	for i < len(in) && isDigit(in[i]) {
		i++
	}
	whole, frac := in[:i], ""
	if i < len(in) && (in[i] == '.' || in[i] == ',') {
		j := i + 1
		for j < len(in) && isDigit(in[j]) {
			j++
		}
		frac = in[i+1 : j]
		if frac == "" {
			return fail(allowed)
		}
		if in[i] == ',' && len(frac) == 3 {
			return fail(fmt.Sprintf("the comma in %s,%s may separate decimals or thousands: write %s.%s or %s%s",
				whole, frac, whole, frac, whole, frac))
		}
		i = j
	}
	if whole == "" {
		return fail(allowed)
	}

	unit := strings.TrimSpace(in[i:])
	lower := strings.ToLower(unit)
	perSecond := false
	for _, per := range []string{"/s", "/sec"} {
		if strings.HasSuffix(lower, per) {
			unit, lower = unit[:len(unit)-len(per)], lower[:len(lower)-len(per)]
			perSecond = true
			break
		}
	}

	// The prefix is a letter of kmgt, then an optional i.
	prefix := ""
	if len(lower) > 0 && strings.IndexByte("kmgt", lower[0]) >= 0 {
		prefix = lower[:1]
		if len(lower) > 1 && lower[1] == 'i' {
			prefix = lower[:2]
		}
	}
	unit = unit[len(prefix):]
	lower = lower[len(prefix):]
	p := prefixes[prefix]

	bits := false
	switch {
	case lower == "bps" && perSecond:
		return fail(allowed)
	case unit == "":
		return fail(noUnit)
	case unit == "B" || lower == "byte" || lower == "bytes" || unit == "Bps":
	case lower == "bit" || lower == "bits" || unit == "bps":
		bits = true
	case unit == "b" || lower == "bps":
		number := in[:i]
		return fail(fmt.Sprintf("%q may mean bits or bytes; write %s%sB for bytes or %s%sbit for bits",
			unit, number, p.name, number, p.name))
	default:
		return fail(allowed)
	}

	n, err := strconv.ParseFloat(whole+"."+frac, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return fail(allowed)
	}
	if n == 0 {
		return fail(allowed)
	}
	v := n * p.mult
	if bits {
		v /= 8
	}
	switch {
	case v > MaxRate || math.IsInf(v, 0):
		return fail("more than the maximum of 1TB/s")
	case math.Round(v) < 1:
		return fail("less than 1 byte per second")
	}
	return int64(math.Round(v)), nil
}

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool {
	return '0' <= c && c <= '9'
}
