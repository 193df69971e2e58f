package cmd

import (
	"context"
	"os"
	"time"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/notify"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// interruptedNotifyWait bounds the wait for notifications of a command
// that was interrupted (SIGTERM, Ctrl-C): whoever stops it wants it gone.
const interruptedNotifyWait = 5 * time.Second

// newNotifier returns the notifier of this process's passes: it sends
// nothing until a run of a job with a route starts.
func newNotifier() *notify.Notifier {
	host, _ := os.Hostname()
	return notify.New(notify.Options{Host: host, Version: version})
}

// notifyObservers returns the pass's observers that tell the config's
// webhooks and healthchecks of runs.
func (s *scheduler) notifyObservers(cfg *config.Config) []pass.Observer {
	return []pass.Observer{s.notifier.Observer(cfg.JobDefs(), cfg.NotifyRoutes())}
}

// closeNotifications waits for the notifications still being delivered,
// at most as long as the longest delivery may take (notify.Routes.CloseWait,
// at most 2 minutes; 5 seconds when ctx, the command's, was interrupted),
// and warns of each that was not delivered. A notification never changes
// the exit code: it must not fail a run.
func (s *scheduler) closeNotifications(ctx context.Context, p *printer) {
	wait := s.cfg.NotifyRoutes().CloseWait()
	if ctx.Err() != nil {
		wait = min(wait, interruptedNotifyWait)
	}
	waitCtx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s.notifier.Close(waitCtx)
	reportNotifications(p, s.notifier)
}

// reportNotifications warns of each notification not delivered since the
// last report, one line each, naming a URL's scheme and host only.
func reportNotifications(p *printer, n *notify.Notifier) {
	for _, f := range n.Failures() {
		p.Warnf("%s", f)
	}
}
