package dash

import (
	"context"

	"berth.io/berth/internal/model"
)

// ModelRow is one model of the store: its versions, where each alias
// points now, and every alias's moves, oldest first.
type ModelRow struct {
	Name     string          `json:"name"`
	Versions []model.Version `json:"versions"`
	Aliases  []model.Move    `json:"aliases"`
	History  []model.Move    `json:"history"`
}

// models reads the registry; none when no store is configured. The
// store is read on each request: it is not a cluster object the cache
// watches, so the Models page is as fresh as its last load.
func models(ctx context.Context, r *model.Registry) ([]ModelRow, error) {
	out := []ModelRow{}
	if r == nil {
		return out, nil
	}
	names, err := r.Models(ctx)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		row := ModelRow{Name: name}
		if row.Versions, err = r.Versions(ctx, name); err != nil {
			return nil, err
		}
		if row.Aliases, err = r.Aliases(ctx, name); err != nil {
			return nil, err
		}
		if row.History, err = r.History(ctx, name, ""); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, nil
}
