// Package model is berth's model registry. It lives in the artifact store
// itself, so a cluster needs nothing but the bucket:
//
//	blobs/sha256/<hex>                          file contents, stored once
//	models/NAME/versions/0000000001.json        version 1's manifest
//	models/NAME/aliases/ALIAS/0000000001.json   the alias's first move
//
// Versions and alias moves are append-only logs (see seqLog): an alias is
// where its last move points, and moving it is creating the next move
// record, a compare-and-swap that one of two concurrent promotions loses,
// with the winner's record to show for it.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/problem"
)

// File is one file of a version.
type File struct {
	// Path is slash-separated, relative to the model's root.
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Digest string `json:"digest"` // sha256:<hex>
}

// Version is one pushed version's manifest. It never changes.
type Version struct {
	Model   string `json:"model"`
	Version int    `json:"version"`
	// Files is nil in the summaries list returns.
	Files     []File             `json:"files,omitempty"`
	FileCount int                `json:"fileCount"`
	Size      int64              `json:"size"`
	Metrics   map[string]float64 `json:"metrics,omitempty"`
	Params    map[string]string  `json:"params,omitempty"`
	Source    string             `json:"source,omitempty"`
	CreatedBy string             `json:"createdBy"`
	Created   time.Time          `json:"created"`
}

// Ref returns NAME:VERSION.
func (v *Version) Ref() string { return fmt.Sprintf("%s:%d", v.Model, v.Version) }

// Move is one move of an alias. It never changes.
type Move struct {
	Model string `json:"model"`
	Alias string `json:"alias"`
	Seq   int    `json:"seq"`
	// From is the version the alias pointed to before; 0 for its first
	// move.
	From   int       `json:"from,omitempty"`
	To     int       `json:"to"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
	// Undoes is the move a rollback reverts.
	Undoes int `json:"undoes,omitempty"`
}

// Registry is the registry in one store.
type Registry struct {
	Store store.Store
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// User names who pushes and moves; empty means $BERTH_USER, else the
	// login name.
	User string
}

func (r *Registry) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

func (r *Registry) user() string {
	if r.User != "" {
		return r.User
	}
	if u := os.Getenv("BERTH_USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		h, _ := os.Hostname()
		return u.Username + "@" + h
	}
	return "unknown"
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$`)

// CheckName refuses a model or alias name that is not a lowercase
// DNS-style name (it is a key in the store and a value in annotations).
func CheckName(what, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%s %q: use lowercase letters, digits, '.', '_' and '-', starting and ending with a letter or digit, at most 63 characters", what, name)
	}
	return nil
}

func (r *Registry) versions(name string) *seqLog {
	return &seqLog{st: r.Store, dir: "models/" + name + "/versions", pack: summarize}
}

func (r *Registry) moves(name, alias string) *seqLog {
	return &seqLog{st: r.Store, dir: "models/" + name + "/aliases/" + alias}
}

// summarize drops a manifest's file list for the packed pages.
func summarize(raw json.RawMessage) json.RawMessage {
	var v Version
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	v.Files = nil
	out, _ := json.Marshal(v)
	return out
}

// Models lists the registry's models.
func (r *Registry) Models(ctx context.Context) ([]string, error) {
	names, err := r.Store.Children(ctx, "models/")
	sort.Strings(names)
	return names, err
}

// Versions lists a model's live versions, oldest first, without their
// file lists.
func (r *Registry) Versions(ctx context.Context, name string) ([]Version, error) {
	raw, err := r.versions(name).all(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Version, 0, len(raw))
	for _, m := range raw {
		var v Version
		if err := json.Unmarshal(m, &v); err != nil {
			return nil, fmt.Errorf("model %s in %s: a version record is not valid JSON: %w", name, r.Store, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Version reads one version's manifest.
func (r *Registry) Version(ctx context.Context, name string, version int) (*Version, error) {
	l := r.versions(name)
	var v Version
	if err := l.get(ctx, version, &v); err != nil {
		if !errors.Is(err, store.ErrNotExist) {
			return nil, err
		}
		if gone, _ := l.isGone(ctx, version); gone {
			return nil, problem.Errorf(fmt.Sprintf("push the model again, or use a version `berth model list %s` shows", name), "%s:%d was deleted by berth model gc", name, version)
		}
		head, herr := l.head(ctx)
		if herr == nil && head == 0 {
			return nil, problem.Errorf(fmt.Sprintf("push one with `berth model push %s PATH`, or check --store", name), "model %s has no versions in %s", name, r.Store)
		}
		return nil, problem.Errorf(fmt.Sprintf("use a version `berth model list %s` shows", name), "%s:%d does not exist in %s (the latest is %d)", name, version, r.Store, head)
	}
	return &v, nil
}

// Latest is the model's newest version number (0 when it has none).
func (r *Registry) Latest(ctx context.Context, name string) (int, error) {
	return r.versions(name).head(ctx)
}

// Ref is a reference to a version: NAME (the latest), NAME:VERSION or
// NAME@ALIAS.
type Ref struct {
	Name    string
	Version int    // 0 unless NAME:VERSION
	Alias   string // "" unless NAME@ALIAS
}

func (r Ref) String() string {
	switch {
	case r.Alias != "":
		return r.Name + "@" + r.Alias
	case r.Version > 0:
		return r.Name + ":" + strconv.Itoa(r.Version)
	}
	return r.Name
}

// ParseRef reads NAME, NAME:VERSION or NAME@ALIAS.
func ParseRef(s string) (Ref, error) {
	var ref Ref
	switch {
	case strings.Contains(s, "@"):
		ref.Name, ref.Alias, _ = strings.Cut(s, "@")
		if err := CheckName("alias", ref.Alias); err != nil {
			return ref, fmt.Errorf("model reference %q: %w", s, err)
		}
	case strings.Contains(s, ":"):
		var v string
		ref.Name, v, _ = strings.Cut(s, ":")
		n, err := strconv.Atoi(strings.TrimPrefix(v, "v"))
		if err != nil || n < 1 {
			return ref, problem.Errorf("write NAME:VERSION (reco:3), NAME@ALIAS (reco@production) or NAME", "model reference %q: version %q is not a positive number", s, v)
		}
		ref.Version = n
	default:
		ref.Name = s
	}
	if err := CheckName("model", ref.Name); err != nil {
		return ref, fmt.Errorf("model reference %q: %w", s, err)
	}
	return ref, nil
}

// Resolve finds the version a reference names.
func (r *Registry) Resolve(ctx context.Context, ref Ref) (*Version, error) {
	n := ref.Version
	switch {
	case ref.Alias != "":
		m, err := r.Alias(ctx, ref.Name, ref.Alias)
		if err != nil {
			return nil, err
		}
		n = m.To
	case n == 0:
		latest, err := r.Latest(ctx, ref.Name)
		if err != nil {
			return nil, err
		}
		if latest == 0 {
			return nil, problem.Errorf(fmt.Sprintf("push one with `berth model push %s PATH`, or check --store", ref.Name), "model %s has no versions in %s", ref.Name, r.Store)
		}
		n = latest
	}
	return r.Version(ctx, ref.Name, n)
}
