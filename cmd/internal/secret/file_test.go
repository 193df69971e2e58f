//go:build unix

package secret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "secret-name.pass")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return file
}

// A password file is judged by its mode bits as ssh judges a key (the
// bits, not access: tests run as root in CI, who may write anything).
func TestReadFileJudgesTheMode(t *testing.T) {
	tests := []struct {
		name        string
		mode        os.FileMode
		wantErr     string
		wantWarning string
	}{
		{"private", 0o600, "", ""},
		{"read-only for its owner", 0o400, "", ""},
		{"readable by its group", 0o640, "", "is readable by others (mode 0640): keep it private with chmod go-r on it"},
		{"readable by everyone", 0o644, "", "is readable by others (mode 0644): keep it private with chmod go-r on it"},
		{"writable by everyone", 0o666, "is writable by others (mode 0666): refused, as anyone could change the password it holds; fix: chmod o-w on it", ""},
		{"writable by everyone, readable by nobody else", 0o602, "is writable by others (mode 0602): refused, as anyone could change the password it holds; fix: chmod o-w on it", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, "hunter2\n", tc.mode)
			pw, warning, err := ReadFile(file)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, ErrUnsafe) {
					t.Fatalf("error = %v, want %q (ErrUnsafe)", err, tc.wantErr)
				}
				if pw != nil {
					t.Errorf("a refused file gave the password %q", pw)
				}
				return
			}
			if err != nil || string(pw) != "hunter2" {
				t.Fatalf("ReadFile = %q, %v; want hunter2", pw, err)
			}
			if warning != tc.wantWarning {
				t.Errorf("warning = %q, want %q", warning, tc.wantWarning)
			}
		})
	}
}

func TestReadFileTakesOneBoundedLine(t *testing.T) {
	tests := []struct {
		name, content, want, wantErr string
	}{
		{"a line and more", "hunter2\r\nsecond\n", "hunter2", ""},
		{"no line break", "hunter2", "hunter2", ""},
		{"the longest line", strings.Repeat("x", MaxLine) + "\r\n", strings.Repeat("x", MaxLine), ""},
		{"a line too long", strings.Repeat("x", MaxLine+1) + "\n", "", errTooLong.Error()},
		{"a huge file without a break", strings.Repeat("x", 1<<20), "", errTooLong.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pw, _, err := ReadFile(writeFile(t, tc.content, 0o600))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(pw) != tc.want {
				t.Fatalf("ReadFile = %d bytes, %v; want %d bytes", len(pw), err, len(tc.want))
			}
		})
	}
}

// An error never shows the file's path: the path of a secret is one too.
func TestReadFileErrorsShowNoPath(t *testing.T) {
	_, _, err := ReadFile(filepath.Join(t.TempDir(), "secret-name.pass"))
	if err == nil || err.Error() != "cannot be read: no such file or directory" {
		t.Fatalf("error = %v", err)
	}
}

func TestCheckConfigMode(t *testing.T) {
	for mode, refused := range map[os.FileMode]bool{0o600: false, 0o644: false, 0o664: false, 0o666: true, 0o602: true} {
		fi, err := os.Stat(writeFile(t, "", mode))
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckConfigMode(fi); (err != nil) != refused || (refused && !errors.Is(err, ErrUnsafe)) {
			t.Errorf("mode %04o: error %v, want refused %v", mode, err, refused)
		}
	}
}
