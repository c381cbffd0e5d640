package model

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"berth.io/berth/internal/problem"
)

// GCOptions bound what gc deletes.
type GCOptions struct {
	// Keep is how many of the newest versions stay, at least 1.
	Keep int
	// Window is how many of each alias's latest moves protect the
	// versions they moved from and to. Zero means Keep.
	Window int
	// Grace spares unreferenced blobs younger than this: a push uploads
	// its files before it writes the manifest that references them.
	Grace time.Duration
	// DryRun reports and deletes nothing.
	DryRun bool
}

// GCResult is what gc deleted (or would).
type GCResult struct {
	Deleted []int `json:"deleted"`
	// Protected are versions kept only because an alias points, or
	// pointed within its window, at them.
	Protected map[int]string `json:"protected,omitempty"`
	Blobs     int            `json:"blobsDeleted"`
	BlobBytes int64          `json:"blobBytesFreed"`
	Kept      []int          `json:"kept"`
	DryRun    bool           `json:"dryRun,omitempty"`
}

// GC deletes a model's old versions, never one an alias points to or
// pointed to within its window, and then the stored files no version of
// any model references any more.
func (r *Registry) GC(ctx context.Context, name string, o GCOptions) (*GCResult, error) {
	if o.Keep < 1 {
		return nil, problem.Errorf("pass --keep 1 or more", "gc --keep %d: keep at least the newest version", o.Keep)
	}
	if o.Window <= 0 {
		o.Window = o.Keep
	}
	versions, err := r.Versions(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(versions) == 0 {
		return nil, problem.Errorf("check the name with `berth model list`, or --store", "model %s has no versions in %s", name, r.Store)
	}
	protect := map[int]string{}
	aliases, err := r.Store.Children(ctx, "models/"+name+"/aliases/")
	if err != nil {
		return nil, err
	}
	for _, a := range aliases {
		moves, err := r.History(ctx, name, a)
		if err != nil {
			return nil, err
		}
		for i := len(moves) - 1; i >= 0 && i >= len(moves)-o.Window; i-- {
			m := moves[i]
			if i == len(moves)-1 {
				protect[m.To] = fmt.Sprintf("@%s points to it", a)
			} else if _, ok := protect[m.To]; !ok {
				protect[m.To] = fmt.Sprintf("@%s pointed to it (move %d)", a, m.Seq)
			}
			if _, ok := protect[m.From]; m.From > 0 && !ok {
				protect[m.From] = fmt.Sprintf("@%s pointed to it (move %d)", a, m.Seq)
			}
		}
	}
	res := &GCResult{Protected: map[int]string{}, DryRun: o.DryRun}
	l := r.versions(name)
	for i, v := range versions {
		newest := i >= len(versions)-o.Keep
		why, protected := protect[v.Version]
		switch {
		case newest:
			res.Kept = append(res.Kept, v.Version)
		case protected:
			res.Kept = append(res.Kept, v.Version)
			res.Protected[v.Version] = why
		default:
			res.Deleted = append(res.Deleted, v.Version)
			if !o.DryRun {
				if err := l.markGone(ctx, v.Version); err != nil {
					return nil, fmt.Errorf("deleting %s:%d: %w", name, v.Version, err)
				}
			}
		}
	}
	if o.DryRun {
		return res, nil
	}
	return res, r.gcBlobs(ctx, o.Grace, res)
}

// gcBlobs deletes the blobs that no live version of any model references.
func (r *Registry) gcBlobs(ctx context.Context, grace time.Duration, res *GCResult) error {
	used := map[string]bool{}
	models, err := r.Models(ctx)
	if err != nil {
		return err
	}
	for _, m := range models {
		vs, err := r.Versions(ctx, m)
		if err != nil {
			return err
		}
		for _, v := range vs {
			full, err := r.Version(ctx, m, v.Version)
			if err != nil {
				continue // deleted meanwhile
			}
			for _, f := range full.Files {
				used[strings.TrimPrefix(f.Digest, "sha256:")] = true
			}
		}
	}
	blobs, err := r.Store.List(ctx, "blobs/sha256/")
	if err != nil {
		return err
	}
	// Stores stamp objects with the real clock, not r.Now.
	cutoff := time.Now().Add(-grace)
	for _, b := range blobs {
		hex := b.Key[strings.LastIndex(b.Key, "/")+1:]
		if used[hex] || b.Modified.After(cutoff) {
			continue
		}
		if err := r.Store.Delete(ctx, b.Key); err != nil {
			return err
		}
		res.Blobs++
		res.BlobBytes += b.Size
	}
	sort.Ints(res.Deleted)
	return nil
}
