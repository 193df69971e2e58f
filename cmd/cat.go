package cmd

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func catCommand() *cli.Command {
	return &cli.Command{
		Name:      "cat",
		Usage:     "print one repository object, decrypted, for debugging: JSON, or a blob's raw bytes",
		ArgsUsage: "config | index|snapshot|tree|blob|key|pack|lock ID",
		Description: "ID may be a unique prefix; a snapshot may also be latest. " +
			"cat key prints a key file's public parameters, never the master key it wraps; " +
			"cat pack prints the pack's decrypted header (its blobs), not its bytes.",
		Flags:  readRepoFlags(),
		Action: runCat,
	}
}

// catTypes are the types cat takes besides config.
var catTypes = []string{"index", "snapshot", "tree", "blob", "key", "pack", "lock"}

// catOptions is what cat was asked to print.
type catOptions struct {
	Type string
	Ref  string // an ID or a unique prefix of one; "" for config
}

func catArgs(c *cli.Context) (catOptions, error) {
	args := c.Args().Slice()
	want := "config, or one of " + strings.Join(catTypes, ", ") + " and an ID"
	switch {
	case len(args) == 0:
		return catOptions{}, usageError{fmt.Errorf("cat needs a type: %s", want)}
	case args[0] == "config" && len(args) == 1:
		return catOptions{Type: "config"}, nil
	case args[0] == "config":
		return catOptions{}, usageError{errors.New("cat config takes no ID")}
	case !slices.Contains(catTypes, args[0]):
		return catOptions{}, usageError{fmt.Errorf("cannot cat %q: want %s", args[0], want)}
	case len(args) != 2 || args[1] == "":
		return catOptions{}, usageError{fmt.Errorf("cat %s needs exactly one ID", args[0])}
	}
	return catOptions{Type: args[0], Ref: args[1]}, nil
}

func runCat(c *cli.Context) error { return withRepository(c, catArgs, catIn) }

// catIn prints the object opts names.
func catIn(c *cli.Context, p *printer, r *repo.Repository, opts catOptions) error {
	ctx := c.Context
	var v any
	switch opts.Type {
	case "config":
		cfg := r.Config()
		cfg.InsecureKey = nil // key material of an unencrypted repository
		v = cfg
	case "snapshot":
		s, err := r.FindSnapshot(ctx, opts.Ref, nil)
		if errors.Is(err, repo.ErrSnapshotNotFound) {
			return usageError{fmt.Errorf("no snapshot %s in the repository", opts.Ref)}
		}
		if err != nil {
			return err
		}
		v = struct {
			ID string `json:"id"`
			*repo.Snapshot
		}{s.ID, s}
	case "key":
		name, err := uniqueName(c, r, repo.KeyFile, "key", opts.Ref)
		if err != nil {
			return err
		}
		keys, err := r.ListKeys(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(keys, func(k repo.KeyInfo) bool { return k.Name == name })
		if i < 0 {
			return fmt.Errorf("key %s: %w", name, repo.ErrNotFound)
		}
		v = struct {
			ID string `json:"id"`
			repo.KeyInfo
		}{name, keys[i]}
	case "lock":
		name, err := uniqueName(c, r, repo.LockFile, "lock", opts.Ref)
		if err != nil {
			return err
		}
		info, err := r.ReadLock(ctx, name)
		if err != nil {
			return err
		}
		v = struct {
			ID string `json:"id"`
			repo.LockInfo
		}{name, info}
	case "index":
		name, err := uniqueName(c, r, repo.IndexFile, "index file", opts.Ref)
		if err != nil {
			return err
		}
		blobs, packs, err := r.ReadIndexFile(ctx, name)
		if err != nil {
			return err
		}
		v = indexJSON(name, blobs, packs)
	case "pack":
		name, err := uniqueName(c, r, repo.PackFile, "pack", opts.Ref)
		if err != nil {
			return err
		}
		v, err = packJSON(c, r, name)
		if err != nil {
			return err
		}
	case "tree", "blob":
		return catBlob(c, p, r, opts)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	p.Printf("%s\n", out)
	return nil
}

// catBlob prints a tree blob's JSON, indented, or a blob's raw bytes.
func catBlob(c *cli.Context, p *printer, r *repo.Repository, opts catOptions) error {
	if err := r.LoadIndex(c.Context); err != nil {
		return err
	}
	b, err := uniqueBlob(r.Index(), opts.Type, opts.Ref)
	if err != nil {
		return err
	}
	if opts.Type == "tree" && b.Type != repo.TreeBlob {
		return usageError{fmt.Errorf("blob %s is a %s blob, not a tree: use cat blob", b.ID, b.Type)}
	}
	plain, err := r.LoadBlob(c.Context, b.ID)
	if err != nil {
		return err
	}
	if opts.Type == "blob" {
		_, err := p.stdout.Write(plain)
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, plain, "", "  "); err != nil {
		return fmt.Errorf("tree %s: %v: %w", b.ID.Short(), err, repo.ErrIntegrity)
	}
	p.Printf("%s\n", out.Bytes())
	return nil
}

// uniqueBlob finds the indexed blob whose ID is ref or starts with it.
func uniqueBlob(idx *repo.Index, what, ref string) (repo.IndexedBlob, error) {
	if id, err := repo.ParseID(ref); err == nil {
		if b, ok := idx.Lookup(id); ok {
			return b, nil
		}
	}
	ref = strings.ToLower(ref)
	if _, err := hex.DecodeString(ref + strings.Repeat("0", len(ref)%2)); err != nil || len(ref) > 64 {
		return repo.IndexedBlob{}, usageError{fmt.Errorf("invalid %s ID %q: want hex digits", what, ref)}
	}
	var match []repo.IndexedBlob
	err := idx.Each(func(b repo.IndexedBlob) {
		if strings.HasPrefix(b.ID.String(), ref) {
			match = append(match, b)
		}
	})
	if err != nil {
		return repo.IndexedBlob{}, err
	}
	switch len(match) {
	case 0:
		return repo.IndexedBlob{}, usageError{fmt.Errorf("no %s %s in the repository's index", what, ref)}
	case 1:
		return match[0], nil
	}
	return repo.IndexedBlob{}, usageError{fmt.Errorf("%s prefix %q is ambiguous: %d blobs start with it", what, ref, len(match))}
}

// uniqueName finds the object of type t whose name is ref or starts with
// it; what names the type in messages.
func uniqueName(c *cli.Context, r *repo.Repository, t repo.FileType, what, ref string) (string, error) {
	names, err := listNames(c, r, t)
	if err != nil {
		return "", err
	}
	var match []string
	for _, name := range names {
		if name == ref {
			return name, nil
		}
		if strings.HasPrefix(name, ref) {
			match = append(match, name)
		}
	}
	switch len(match) {
	case 0:
		return "", usageError{fmt.Errorf("no %s %s in the repository", what, ref)}
	case 1:
		return match[0], nil
	}
	return "", usageError{fmt.Errorf("%s prefix %q is ambiguous: %d start with it", what, ref, len(match))}
}

// blobJSON is one blob of a pack, as cat index and cat pack print it.
type blobJSON struct {
	ID          repo.ID `json:"id"`
	Type        string  `json:"type"`
	Offset      uint32  `json:"offset"`
	Length      uint32  `json:"length"`
	RawLength   uint32  `json:"raw_length"`
	Compression string  `json:"compression"`
}

func newBlobJSON(b repo.PackedBlob) blobJSON {
	comp := "none"
	if b.Compression != 0 {
		comp = "zstd"
	}
	return blobJSON{ID: b.ID, Type: b.Type.String(), Offset: b.Offset, Length: b.Length, RawLength: b.RawLength, Compression: comp}
}

// packBlobsJSON is a pack and its blobs.
type packBlobsJSON struct {
	ID    repo.ID    `json:"id"`
	Size  int64      `json:"size,omitempty"`
	Blobs []blobJSON `json:"blobs"`
}

// indexJSON is an index file as cat index prints it: its packs, each with
// its blobs in the order of the pack.
func indexJSON(name string, blobs []repo.IndexedBlob, packs []repo.ID) any {
	byPack := map[repo.ID]int{}
	out := make([]packBlobsJSON, 0, len(packs))
	for _, id := range packs {
		byPack[id] = len(out)
		out = append(out, packBlobsJSON{ID: id, Blobs: []blobJSON{}})
	}
	for _, b := range blobs {
		i, ok := byPack[b.Pack]
		if !ok {
			i = len(out)
			byPack[b.Pack] = i
			out = append(out, packBlobsJSON{ID: b.Pack, Blobs: []blobJSON{}})
		}
		out[i].Blobs = append(out[i].Blobs, newBlobJSON(b.PackedBlob))
	}
	for _, pk := range out {
		slices.SortFunc(pk.Blobs, func(a, b blobJSON) int { return int(a.Offset) - int(b.Offset) })
	}
	return struct {
		ID    string          `json:"id"`
		Packs []packBlobsJSON `json:"packs"`
	}{name, out}
}

// packJSON reads a pack's header.
func packJSON(c *cli.Context, r *repo.Repository, name string) (any, error) {
	id, err := repo.ParseID(name)
	if err != nil {
		return nil, fmt.Errorf("pack %s: bad name: %w", name, repo.ErrIntegrity)
	}
	size, err := r.Backend().Stat(c.Context, repo.Handle{Type: repo.PackFile, Name: name})
	if err != nil {
		return nil, err
	}
	blobs, err := r.ReadPackHeader(c.Context, id, size)
	if err != nil {
		return nil, err
	}
	out := packBlobsJSON{ID: id, Size: size, Blobs: make([]blobJSON, len(blobs))}
	for i, b := range blobs {
		out.Blobs[i] = newBlobJSON(b)
	}
	return out, nil
}
