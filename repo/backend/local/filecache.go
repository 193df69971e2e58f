package local

import (
	"container/list"
	"os"
	"sync"
)

// fileCache keeps recently read pack files open, so that reading many
// blobs from one pack (a restore, a check) does not open the file for each
// blob. Packs never change once written; Remove drops a file's entry.
type fileCache struct {
	mu      sync.Mutex
	max     int
	order   *list.List // of *cachedFile, most recently used first
	entries map[string]*list.Element
}

type cachedFile struct {
	name string
	f    *os.File
	refs int  // readers using f now
	gone bool // evicted or removed: close when the last reader is done
}

func newFileCache(max int) *fileCache {
	return &fileCache{max: max, order: list.New(), entries: map[string]*list.Element{}}
}

// open returns an open file for name and a function to call when done.
func (c *fileCache) open(name string) (*os.File, func(), error) {
	c.mu.Lock()
	if el, ok := c.entries[name]; ok {
		cf := el.Value.(*cachedFile)
		cf.refs++
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return cf.f, func() { c.release(cf) }, nil
	}
	c.mu.Unlock()
	// Never follow a symlink out of the repository.
	f, err := openNoFollow(name)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[name]; ok { // another reader opened it meanwhile
		f.Close()
		cf := el.Value.(*cachedFile)
		cf.refs++
		return cf.f, func() { c.release(cf) }, nil
	}
	cf := &cachedFile{name: name, f: f, refs: 1}
	c.entries[name] = c.order.PushFront(cf)
	for c.order.Len() > c.max {
		c.dropLocked(c.order.Back())
	}
	return f, func() { c.release(cf) }, nil
}

func (c *fileCache) release(cf *cachedFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cf.refs--
	if cf.gone && cf.refs == 0 {
		cf.f.Close()
	}
}

func (c *fileCache) dropLocked(el *list.Element) {
	cf := el.Value.(*cachedFile)
	c.order.Remove(el)
	delete(c.entries, cf.name)
	cf.gone = true
	if cf.refs == 0 {
		cf.f.Close()
	}
}

// forget drops name from the cache (it is being removed).
func (c *fileCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[name]; ok {
		c.dropLocked(el)
	}
}

// close closes every cached file that no reader uses.
func (c *fileCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.order.Len() > 0 {
		c.dropLocked(c.order.Back())
	}
}
