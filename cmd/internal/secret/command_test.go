//go:build unix

package secret

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// The password is the first line of standard output, without "\r\n";
// the rest is discarded.
func TestCommandTakesTheFirstLine(t *testing.T) {
	pw, err := Command(context.Background(), sh(`printf 'hunter2\r\nsecond line\n'`), time.Minute)
	if err != nil || string(pw) != "hunter2" {
		t.Fatalf("Command = %q, %v; want hunter2", pw, err)
	}
}

// A command that fails says only how it ended: what it printed, on either
// stream, may be the token it failed to use.
func TestCommandFailureShowsOnlyTheExitStatus(t *testing.T) {
	_, err := Command(context.Background(), sh(`echo 'vault: token s.SECRET-TOKEN denied' >&2; echo s.SECRET-TOKEN; exit 3`), time.Minute)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "failed: exit status 3 ") {
		t.Errorf("error = %q, want it to start with the exit status", msg)
	}
	if strings.Contains(msg, "SECRET") || strings.Contains(msg, "vault") {
		t.Errorf("error %q quotes the command's output", msg)
	}
}

// 300 MB on one line: the command is stopped at MaxLine, and nothing like
// its output is held in memory.
func TestCommandFirstLineTooLong(t *testing.T) {
	const size = 300 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Command(context.Background(), sh(`head -c 314572800 /dev/zero`), time.Hour)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errTooLong) {
		t.Fatalf("error = %v, want a first line too long", err)
	}
	if !strings.Contains(err.Error(), "longer than 4096 bytes") {
		t.Errorf("error = %q does not say the limit", err)
	}
	grew := after.TotalAlloc - before.TotalAlloc
	if grew > size/32 {
		t.Errorf("reading the command's output allocated %d bytes", grew)
	}
	t.Logf("%d MiB of output, %d KiB allocated", size>>20, grew>>10)
}

// 300 MB after a first line that fits: the password is taken, the rest
// read and discarded without being held.
func TestCommandLongOutputAfterThePassword(t *testing.T) {
	const size = 300 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	pw, err := Command(context.Background(), sh(`echo hunter2; head -c 314572800 /dev/zero`), time.Hour)
	runtime.ReadMemStats(&after)
	if err != nil || string(pw) != "hunter2" {
		t.Fatalf("Command = %q, %v; want hunter2", pw, err)
	}
	grew := after.TotalAlloc - before.TotalAlloc
	if grew > size/32 {
		t.Errorf("reading the command's output allocated %d bytes", grew)
	}
	t.Logf("%d MiB of output, %d KiB allocated", size>>20, grew>>10)
}

// A command that never ends fails by its timeout, with a one-line
// message naming the setting: the command itself decides nothing of the
// outcome, so the real timer serves.
func TestCommandTimeout(t *testing.T) {
	_, err := Command(context.Background(), sh(`sleep 1000`), time.Millisecond)
	if err == nil {
		t.Fatal("no error")
	}
	want := "did not finish within 1ms and was stopped with everything it started (set password_command_timeout to allow longer)"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

// A cancelled caller stops the command, and says it was cancelled.
func TestCommandCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Command(ctx, sh(`sleep 1000`), time.Hour)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestCommandWithAnEmptyArgv(t *testing.T) {
	if _, err := Command(context.Background(), nil, time.Minute); err == nil || err.Error() != "is empty" {
		t.Fatalf("error = %v, want \"is empty\"", err)
	}
}
