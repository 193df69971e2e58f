package cmd

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns both ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pseudo-terminal number: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// An archive is never written to a terminal: dump of a folder to one is
// refused with one line and exit 2; a file, or a folder with --target,
// is written.
func TestDumpRefusesAnArchiveOnATerminal(t *testing.T) {
	f := newReadFixture(t)
	_, tty := openPTY(t)
	var stderr bytes.Buffer
	code := Main([]string{"nightjar", "dump", firstID, f.src + "/docs"}, tty, &stderr)
	want := "nightjar: " + f.src + "/docs is a folder: its tar archive is not written to a terminal; redirect stdout or give --target FILE\n"
	if code != ExitUsage || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want exit 2, %q", code, stderr.String(), want)
	}
	target := t.TempDir() + "/docs.tar"
	if code := Main([]string{"nightjar", "dump", "--target", target, firstID, f.src + "/docs"}, tty, &stderr); code != ExitOK {
		t.Errorf("dump --target with a terminal as stdout: exit %d: %s", code, stderr.String())
	}
	if info, err := os.Stat(target); err != nil || info.Size() == 0 {
		t.Errorf("dump --target wrote nothing: %v", err)
	}
}
