package config

import (
	"fmt"
	"net"
	"strconv"
)

// Metrics is the [metrics] table: where the scheduler's Prometheus
// metrics go. Both empty: nowhere.
type Metrics struct {
	// Textfile is the file that tick and serve rewrite after every pass,
	// for node_exporter's textfile collector; "": none.
	Textfile string
	// Listen is the address (host:port) on which serve answers GET
	// /metrics; "": serve does not listen.
	Listen string
}

type rawMetrics struct {
	Textfile *string `toml:"textfile"`
	Listen   *string `toml:"listen"`
}

// metrics reads the [metrics] table: a textfile path (relative to the
// config's folder) and a listen address.
func (l *loader) metrics(raw rawMetrics, cfg *Config) {
	if raw.Textfile != nil {
		if *raw.Textfile == "" {
			l.addf("metrics.textfile", "empty path: name the file node_exporter's textfile collector reads, such as \"/var/lib/node_exporter/textfile_collector/nightjar.prom\", or leave the key out")
		}
		cfg.Metrics.Textfile = l.abs(*raw.Textfile)
	}
	if raw.Listen != nil {
		if err := checkListen(*raw.Listen); err != nil {
			l.addf("metrics.listen", "%q: %v", *raw.Listen, err)
		}
		cfg.Metrics.Listen = *raw.Listen
	}
}

// checkListen accepts host:port, with a port from 0 to 65535 (0: any free
// port, which serve prints).
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port such as \"127.0.0.1:9817\" (%v)", err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 0 to 65535, such as \"127.0.0.1:9817\"", port)
	}
	return nil
}
