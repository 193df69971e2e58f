// Command s3proxy runs a fault proxy (repo/backend/s3/faultproxy) in front
// of an S3 server for bench/compare/s3.sh: it forwards every request and
// counts them, and answers the counts on a control address of its own.
//
//	s3proxy -target http://127.0.0.1:9000 -addr-file FILE
//
// FILE gets two lines once both listen: the proxy's host:port, then the
// control's. GET http://CONTROL/counts answers the counts so far as JSON
// (requests by method, and by method and folder; bytes in and out);
// ?reset=1 sets them to zero after answering. It runs until it gets SIGINT
// or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "s3proxy:", err)
		os.Exit(1)
	}
}

func run() error {
	target := flag.String("target", "", "the S3 server, as http://host:port")
	addrFile := flag.String("addr-file", "", "where to write the proxy's and the control's host:port")
	flag.Parse()
	if *target == "" || *addrFile == "" {
		return fmt.Errorf("want -target http://host:port and -addr-file FILE")
	}
	proxy, err := faultproxy.Start(*target, 1)
	if err != nil {
		return err
	}
	defer proxy.Close()

	control, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("control listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /counts", func(w http.ResponseWriter, r *http.Request) {
		c := proxy.Counts()
		if r.URL.Query().Get("reset") == "1" {
			proxy.ResetCounts()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"requests":  c.Requests,
			"total":     c.Total(),
			"bytes_in":  c.BytesIn,
			"bytes_out": c.BytesOut,
			"by_folder": c.ByFolder,
		})
	})
	server := &http.Server{Handler: mux}
	go func() { _ = server.Serve(control) }()
	defer server.Close()

	// Written whole under another name, then renamed: the script waits for
	// the file and must never read half of it.
	tmp := *addrFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(proxy.Addr()+"\n"+control.Addr().String()+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, *addrFile); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}
