package repo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrInsecure is returned by key operations on an unencrypted repository.
var ErrInsecure = errors.New("repository is not encrypted and has no keys")

// ListKeys returns the info of every key file, oldest first.
func (r *Repository) ListKeys(ctx context.Context) ([]KeyInfo, error) {
	var infos []KeyInfo
	err := r.be.List(ctx, KeyFile, func(name string, _ int64) error {
		data, err := r.be.Load(ctx, Handle{Type: KeyFile, Name: name}, 0, -1)
		if err != nil {
			return err
		}
		info, _, _, err := decodeKeyInfo(name, data)
		if err != nil {
			return err
		}
		infos = append(infos, info)
		return nil
	})
	sort.Slice(infos, func(i, j int) bool { return infos[i].Created.Before(infos[j].Created) })
	return infos, err
}

// AddKey wraps the master key under a new password. Data is not touched.
func (r *Repository) AddKey(ctx context.Context, password []byte, kdf KDFParams) (KeyInfo, error) {
	if r.Insecure() {
		return KeyInfo{}, ErrInsecure
	}
	if kdf.Algorithm == "" {
		kdf = DefaultKDF
	}
	return writeKey(ctx, r.be, r.key, password, kdf, r.now())
}

// RemoveKey deletes the key file that name, its full name or a prefix of
// at least 4 characters, names, and returns its full name. The key that
// opened the repository and the last key cannot be removed; the errors
// name keys by their full names.
func (r *Repository) RemoveKey(ctx context.Context, name string) (string, error) {
	if r.Insecure() {
		return "", ErrInsecure
	}
	infos, err := r.ListKeys(ctx)
	if err != nil {
		return "", err
	}
	var match []string
	for _, info := range infos {
		if len(name) >= 4 && len(name) <= len(info.Name) && info.Name[:len(name)] == name {
			match = append(match, info.Name)
		}
	}
	switch {
	case len(match) == 0:
		return "", fmt.Errorf("no key %q (nightjar key list shows them)", name)
	case len(match) > 1:
		return "", fmt.Errorf("key prefix %q is ambiguous: keys %s begin with it", name, strings.Join(match, ", "))
	case match[0] == r.keyName:
		return "", fmt.Errorf("key %s is the one in use: open the repository with another password to remove it, or use key passwd", match[0])
	}
	return match[0], r.be.Remove(ctx, Handle{Type: KeyFile, Name: match[0]})
}

// ChangePassword replaces the key in use with one for a new password. The
// new key is written before the old one is removed, so a crash leaves both.
func (r *Repository) ChangePassword(ctx context.Context, password []byte, kdf KDFParams) (KeyInfo, error) {
	info, err := r.AddKey(ctx, password, kdf)
	if err != nil {
		return KeyInfo{}, err
	}
	if err := r.be.Remove(ctx, Handle{Type: KeyFile, Name: r.keyName}); err != nil {
		return info, fmt.Errorf("new key %s written, but removing the old one %s failed: %w", info.Name, r.keyName, err)
	}
	r.keyName = info.Name
	return info, nil
}
