package jobs

import (
	"context"
	"errors"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// An opener's error keeps the class it carries; one without a class the
// engine knows is class repository (OPEN_FAILED): the repository could not
// be set up, and only this run fails for it.
func TestOpenRepositoryClassifiesItsErrors(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		class     string
		code      string
		retryable bool
	}{
		{"a password source that gives nothing", &pass.ClassError{Class: pass.ClassAuth, Code: CodePasswordUnavailable, Err: errors.New("repository main: its password_env X is not set")},
			pass.ClassAuth, CodePasswordUnavailable, false},
		{"no repository", repo.ErrNoRepository, pass.ClassRepository, CodeNoRepository, true},
		{"a wrong password", repo.ErrWrongPassword, pass.ClassAuth, "WRONG_PASSWORD", false},
		{"anything else", errors.New("config: unexpected end of JSON input"), pass.ClassRepository, CodeOpenFailed, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &Executor{Open: func(context.Context, string) (*repo.Repository, error) { return nil, tc.err }}
			_, err := e.openRepository(context.Background(), pass.JobDef{Name: "home", Repository: "main"}, e.Open)
			var ce *pass.ClassError
			if !errors.As(err, &ce) || ce.Class != tc.class || ce.Code != tc.code {
				t.Fatalf("error %v: want class %s, code %s", err, tc.class, tc.code)
			}
			if pass.Retryable(ce.Class) != tc.retryable {
				t.Errorf("retryable = %v, want %v", !tc.retryable, tc.retryable)
			}
			if want := "open repository main: " + tc.err.Error(); err.Error() != want {
				t.Errorf("message %q, want %q", err, want)
			}
		})
	}
}
