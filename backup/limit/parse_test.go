package limit

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
	}{
		{"megabytes", "50MB", 50_000_000},
		{"megabytes per second", "50MB/s", 50_000_000},
		{"spaces", " 50 MB/s ", 50_000_000},
		{"per sec", "10 bytes/sec", 10},
		{"megabits", "400Mbit", 50_000_000},
		{"megabits per second", "400Mbit/s", 50_000_000},
		{"mbps", "400Mbps", 50_000_000},
		{"mbps lowercase", "400mbps", 50_000_000},
		{"MBps is bytes", "50MBps", 50_000_000},
		{"bits uppercase", "400MBIT", 50_000_000},
		{"comma decimal", "1,5MB", 1_500_000},
		{"dot decimal", "1.5MB", 1_500_000},
		{"comma with two decimals", "1,25MB", 1_250_000},
		{"kibibytes", "512KiB", 512 << 10},
		{"kibibytes uppercase", "512KIB", 512 << 10},
		{"gibibytes", "2GiB", 2 << 30},
		{"mebibytes per second", "1MiB/s", 1 << 20},
		{"mebibits", "8Mibit", 1 << 20},
		{"lowercase k bytes", "100kB", 100_000},
		{"one byte", "1B", 1},
		{"eight bits", "8bit", 1},
		{"fraction rounds", "1.5B", 2},
		{"fraction of kilobyte", "0.5KB", 500},
		{"maximum", "1TB", MaxRate},
		{"maximum in bits", "8Tbit/s", MaxRate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRate(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("ParseRate(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseRateRejects(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // the error message after `invalid bandwidth "in": `
	}{
		{"empty", "", allowed},
		{"spaces", "   ", allowed},
		{"zero", "0", noUnit},
		{"bare number", "10", noUnit},
		{"bare number per second", "4096/s", noUnit},
		{"bare prefix", "100k", noUnit},
		{"bare binary prefix", "512Ki", noUnit},
		{"bare fraction", "1.5", noUnit},
		{"zero with unit", "0.0MB", allowed},
		{"negative", "-5MB", allowed},
		{"plus sign", "+5MB", allowed},
		{"unknown unit", "50XB", allowed},
		{"unit only", "MB", allowed},
		{"space inside unit", "50M B", allowed},
		{"exponent", "1e6", allowed},
		{"two separators", "1.2.3MB", allowed},
		{"separator without decimals", "15.MB", allowed},
		{"leading separator", ".5MB", allowed},
		{"infinity", "inf", allowed},
		{"per second twice", "5MBps/s", allowed},
		{"peta", "1PB", allowed},
		{"ambiguous comma", "1,500MB", "the comma in 1,500 may separate decimals or thousands: write 1.500 or 1500"},
		{"ambiguous megabit", "50Mb", `"b" may mean bits or bytes; write 50MB for bytes or 50Mbit for bits`},
		{"ambiguous lowercase", "50mb", `"b" may mean bits or bytes; write 50MB for bytes or 50Mbit for bits`},
		{"ambiguous binary", "2kib", `"b" may mean bits or bytes; write 2KiB for bytes or 2Kibit for bits`},
		{"ambiguous bps case", "5MBPS", `"BPS" may mean bits or bytes; write 5MB for bytes or 5Mbit for bits`},
		{"too large", "2000TB", "more than the maximum of 1TB/s"},
		{"overflowing", "9" + strings.Repeat("9", 400) + "TiB", "more than the maximum of 1TB/s"},
		{"below one byte", "1bit", "less than 1 byte per second"},
		{"rounds to zero", "0.4B", "less than 1 byte per second"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRate(tt.in)
			if err == nil {
				t.Fatalf("ParseRate(%q) = %d, want an error", tt.in, got)
			}
			if !errors.Is(err, ErrInvalidRate) {
				t.Errorf("ParseRate(%q) error %v does not wrap ErrInvalidRate", tt.in, err)
			}
			want := `invalid bandwidth "` + tt.in + `": ` + tt.want
			if err.Error() != want {
				t.Errorf("ParseRate(%q) error:\n got %s\nwant %s", tt.in, err, want)
			}
		})
	}
}

func TestParseRateMessage(t *testing.T) {
	_, err := ParseRate("50XB")
	want := `invalid bandwidth "50XB": want a positive number with a unit such as 50MB, 50MB/s, 400Mbit or 512KiB`
	if err == nil || err.Error() != want {
		t.Fatalf("ParseRate(\"50XB\") error = %v, want %s", err, want)
	}
}

// FuzzParseRate checks that ParseRate never panics, accepts only rates from 1
// byte per second to MaxRate, and names the input in one-line errors.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"50MB", "50MB/s", "400Mbit/s", "400Mbps", "1,5MB", "512KiB", "2GiB", "100k", "4096",
		"", "0", "-1", "1,500MB", "50Mb", "2000TB", "1bit", "1e6", " 5 kB/sec ", "8Tbit"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRate(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidRate) || strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("ParseRate(%q) error %q: want a one-line ErrInvalidRate", s, err)
			}
			return
		}
		if v < 1 || v > MaxRate {
			t.Fatalf("ParseRate(%q) = %d, want 1 to %d", s, v, MaxRate)
		}
	})
}
