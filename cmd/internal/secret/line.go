package secret

import (
	"bytes"
	"fmt"
)

// MaxLine is the longest password a file's or command's first line may
// hold, in bytes.
const MaxLine = 4096

// errTooLong is a first line longer than MaxLine.
var errTooLong = fmt.Errorf("has a first line longer than %d bytes: want the password alone on the first line", MaxLine)

// firstLine is a writer that keeps the first line written to it, up to
// MaxLine bytes, and discards everything else: a source that writes
// hundreds of megabytes costs no memory. onTooLong, when set, is called
// once when the first line grows past MaxLine.
type firstLine struct {
	buf       []byte
	ended     bool // the first line's break was seen
	tooLong   bool
	onTooLong func()
}

func (l *firstLine) Write(p []byte) (int, error) {
	n := len(p)
	if l.ended || l.tooLong {
		return n, nil
	}
	if i := bytes.IndexByte(p, '\n'); i >= 0 {
		p, l.ended = p[:i], true
	}
	if len(l.buf)+len(p) > MaxLine+1 { // +1: a line may end in "\r\n"
		l.buf, l.tooLong = nil, true
		if l.onTooLong != nil {
			l.onTooLong()
		}
		return n, nil
	}
	l.buf = append(l.buf, p...)
	return n, nil
}

// line is the first line without its line break.
func (l *firstLine) line() ([]byte, error) {
	line := bytes.TrimSuffix(l.buf, []byte("\r"))
	if l.tooLong || len(line) > MaxLine {
		return nil, errTooLong
	}
	return line, nil
}
