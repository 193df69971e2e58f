package metrics

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TextfileMode is the mode of a written textfile: node_exporter usually
// runs as another user than nightjar.
const TextfileMode = 0o644

// Write writes what g gathers to w in Prometheus's text format.
func Write(w io.Writer, g prometheus.Gatherer) error {
	families, err := g.Gather()
	if err != nil {
		return fmt.Errorf("gather metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return fmt.Errorf("encode metrics: %w", err)
		}
	}
	return nil
}

// WriteTextfile writes what g gathers to path atomically: into a temporary
// file in the same folder, synced, made TextfileMode, and renamed over
// path, so that a reader sees the old file or the new one, never a part.
// Nothing is left behind when it fails.
func WriteTextfile(path string, g prometheus.Gatherer) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err // the temporary name says less than path
		}
		return fmt.Errorf("write metrics textfile %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("write metrics textfile %s: %w", path, err)
		}
	}()
	buf := bufio.NewWriter(tmp)
	if err := Write(buf, g); err != nil {
		return err
	}
	if err := buf.Flush(); err != nil {
		return err
	}
	if err := tmp.Chmod(TextfileMode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// The rename is durable once the folder is synced; a folder that
	// cannot be synced (some file systems) does not undo the write.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
