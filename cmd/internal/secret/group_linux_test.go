package secret

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The timeout kills the command's whole process group: a child it
// started in the background (a sleep holding a fifo open for writing) is
// gone too. The test decides when the timeout passes, once the child
// runs, and learns of the child's end by the fifo's end of file.
func TestCommandTimeoutKillsTheProcessGroup(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "child")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fire := make(chan func(), 1)
	afterFunc = func(_ time.Duration, f func()) func() bool {
		fire <- f
		return func() bool { return true }
	}
	t.Cleanup(func() { afterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop } })

	done := make(chan error, 1)
	go func() {
		_, err := Command(context.Background(), sh(`sleep 1000 3>'`+fifo+`' & wait`), 7*time.Second)
		done <- err
	}()
	child, err := os.Open(fifo) // returns once the sleep opened its end
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	(<-fire)() // the timeout passes
	err = <-done
	if err == nil || !strings.HasPrefix(err.Error(), "did not finish within 7s and was stopped") {
		t.Fatalf("error = %v, want the timeout", err)
	}
	// A guard against a child left running, not a measure: the kill is
	// already done when Command returns.
	_ = child.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := io.Copy(io.Discard, child); err != nil || n != 0 {
		t.Fatalf("reading the child's fifo: %d bytes, %v; want end of file, as the child was killed with its group", n, err)
	}
}
