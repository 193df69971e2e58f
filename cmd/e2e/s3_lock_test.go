//go:build linux

package e2e

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// lockRacers is how many processes race for the exclusive lock at once.
const lockRacers = 4

// lockRounds is how many races are run, each with a new snapshot to forget.
const lockRounds = 3

// TestS3ExclusiveLockRace starts several forget processes at once against
// one bucket, through a proxy that holds back the answer to the first
// write that only a process holding the exclusive lock makes (its
// forgetting/ record). While a winner is held there, every other process
// must end refusing as busy: none may reach that write or end otherwise.
// Then the winner is let go and ends well; no lock is left behind and a
// lone forget afterwards proceeds.
func TestS3ExclusiveLockRace(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	proxy := startFaultProxy(t, srv)
	const bucket, prefix = "race", "repo"
	e := newS3Env(t, srv, proxy.Addr(), bucket, prefix)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)

	winners := 0
	for round := range lockRounds {
		writeRandom(t, filepath.Join(src, "f.bin"), uint64(round), 64<<10)
		e.backup(exitOK, src)
		e.backup(exitOK, src)

		release := make(chan struct{})
		held := make(chan struct{}, lockRacers)
		proxy.SetRules(faultproxy.Rule{
			Method: http.MethodPut, PathContains: "/forgetting/", Fault: faultproxy.Delay, Release: release,
			OnFault: func(string, string) { held <- struct{}{} },
		})
		racers := make([]*background, lockRacers)
		for i := range racers {
			racers[i] = e.start("forget", "--keep-last", "1")
		}
		ended := make(chan *background, lockRacers)
		for _, bg := range racers {
			go func() {
				<-bg.done
				ended <- bg
			}()
		}
		holding, busy := 0, 0
		for holding+busy < lockRacers {
			select {
			case <-held:
				holding++
				if holding > 1 {
					t.Errorf("round %d: a second process reached the write of the exclusive lock's holder while the first was held there", round)
				}
			case bg := <-ended:
				code := bg.cmd.ProcessState.ExitCode()
				if code != exitBusy {
					t.Errorf("round %d: a forget beside the lock's holder ended with exit %d, want %d (busy):\n%s", round, code, exitBusy, bg.Stderr.String())
				}
				busy++
			}
		}
		close(release)
		proxy.SetRules()
		for _, bg := range racers {
			<-bg.done
		}
		if holding == 1 {
			winners++
			for _, bg := range racers {
				if code := bg.cmd.ProcessState.ExitCode(); code != exitOK && code != exitBusy {
					t.Errorf("round %d: the lock's holder ended with exit %d:\n%s", round, code, bg.Stderr.String())
				}
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	t.Logf("%d of %d races had a winner (where every racer saw another's lock, all backed off)", winners, lockRounds)

	proxy.SetRules()
	if n := countPrefix(keysUnder(t, srv, bucket, prefix+"/"), "locks/"); n != 0 {
		t.Errorf("%d locks remain after every racer ended", n)
	}
	e.forget(exitOK, "--keep-last", "1")
	if n := len(e.snapshots()); n != 1 {
		t.Errorf("%d snapshots after the last forget --keep-last 1, want 1", n)
	}
	if ck, res := e.check("--read-data"); res.Code != exitOK || !ck.OK {
		t.Errorf("check --read-data after the races:\n%s", res)
	}
}
