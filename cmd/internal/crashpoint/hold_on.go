//go:build crashtest

package crashpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

// holdEnvVar names one hold point and the Unix socket of the test that
// releases it: "NAME:SOCKET".
const holdEnvVar = "NIGHTJAR_HOLDPOINT"

// Hold blocks at the hold point name while NIGHTJAR_HOLDPOINT names it,
// until the test releases it (one byte, or closing the connection), and
// returns at once otherwise. It returns an error when the test cannot be
// reached or ctx ends first; it does nothing else.
func Hold(ctx context.Context, name string) error {
	held, socket, ok := strings.Cut(os.Getenv(holdEnvVar), ":")
	if !ok || held != name {
		return nil
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unix", socket)
	if err != nil {
		return fmt.Errorf("hold point %s: connect to %s: %w", name, socket, err)
	}
	defer conn.Close()
	// A signal ends the hold as it ends any other wait of the command.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if _, err := fmt.Fprintf(conn, "hold %s\n", name); err != nil {
		return fmt.Errorf("hold point %s: announce: %w", name, err)
	}
	if _, err := bufio.NewReader(conn).ReadByte(); err != nil && !errors.Is(err, io.EOF) {
		if ctx.Err() != nil {
			return fmt.Errorf("hold point %s: %w", name, ctx.Err())
		}
		return fmt.Errorf("hold point %s: wait for the release: %w", name, err)
	}
	return nil
}
