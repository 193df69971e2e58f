package backup

import (
	"errors"
	"os/user"
	"strconv"
	"sync"
)

// ownerNames caches user and group names by ID. An ID without a name is
// cached as ""; a lookup that failed otherwise (the user database could
// not be read) is not cached, so that one failure does not strip the
// names from a whole snapshot, and every tree with them, until the next
// backup puts them back.
type ownerNames struct {
	mu          sync.Mutex
	users       map[uint32]string
	groups      map[uint32]string
	lookupUser  func(id string) (string, error)
	lookupGroup func(id string) (string, error)
}

func newOwnerNames() *ownerNames {
	return &ownerNames{
		users:  map[uint32]string{},
		groups: map[uint32]string{},
		lookupUser: func(id string) (string, error) {
			u, err := user.LookupId(id)
			if err != nil {
				return "", err
			}
			return u.Username, nil
		},
		lookupGroup: func(id string) (string, error) {
			g, err := user.LookupGroupId(id)
			if err != nil {
				return "", err
			}
			return g.Name, nil
		},
	}
}

func (o *ownerNames) user(uid uint32) string {
	return o.name(o.users, o.lookupUser, uid)
}

func (o *ownerNames) group(gid uint32) string {
	return o.name(o.groups, o.lookupGroup, gid)
}

func (o *ownerNames) name(cache map[uint32]string, lookup func(string) (string, error), id uint32) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if name, ok := cache[id]; ok {
		return name
	}
	name, err := lookup(strconv.FormatUint(uint64(id), 10))
	var unknownUser user.UnknownUserIdError
	var unknownGroup user.UnknownGroupIdError
	if err == nil || errors.As(err, &unknownUser) || errors.As(err, &unknownGroup) {
		cache[id] = name
	}
	return name
}
