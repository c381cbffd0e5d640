package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/problem"
)

// ConflictError is a promotion that lost: another move of the alias was
// committed first. Winner is that move. It comes as the Err of a
// problem whose fix says how to carry on.
type ConflictError struct {
	Wanted Move
	Winner Move
}

func (e *ConflictError) Error() string {
	w := e.Winner
	reason := ""
	if w.Reason != "" {
		reason = fmt.Sprintf(" (%q)", w.Reason)
	}
	return fmt.Sprintf("%s@%s was moved by %s at %s to version %d%s while you were moving it to %d; your move was not applied",
		w.Model, w.Alias, w.By, w.At.Format("2006-01-02 15:04:05Z"), w.To, reason, e.Wanted.To)
}

// Alias is the alias's last move: where it points now.
func (r *Registry) Alias(ctx context.Context, name, alias string) (*Move, error) {
	l := r.moves(name, alias)
	n, err := l.head(ctx)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		aliases, _ := r.Aliases(ctx, name)
		have := "it has no aliases yet"
		if len(aliases) > 0 {
			var names []string
			for _, a := range aliases {
				names = append(names, a.Alias)
			}
			have = fmt.Sprintf("its aliases are %v", names)
		}
		return nil, problem.Errorf(fmt.Sprintf("promote a version to it with `berth model promote %s VERSION --alias %s`", name, alias), "%s@%s: no such alias; %s", name, alias, have)
	}
	var m Move
	if err := l.get(ctx, n, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// Aliases lists a model's aliases with their last moves.
func (r *Registry) Aliases(ctx context.Context, name string) ([]Move, error) {
	names, err := r.Store.Children(ctx, "models/"+name+"/aliases/")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Move
	for _, a := range names {
		l := r.moves(name, a)
		n, err := l.head(ctx)
		if err != nil || n == 0 {
			continue
		}
		var m Move
		if err := l.get(ctx, n, &m); err == nil {
			out = append(out, m)
		}
	}
	return out, nil
}

// History is every move of an alias, oldest first; with alias "" every
// alias's moves, ordered by time.
func (r *Registry) History(ctx context.Context, name, alias string) ([]Move, error) {
	aliases := []string{alias}
	if alias == "" {
		var err error
		if aliases, err = r.Store.Children(ctx, "models/"+name+"/aliases/"); err != nil {
			return nil, err
		}
	}
	var out []Move
	for _, a := range aliases {
		raw, err := r.moves(name, a).all(ctx)
		if err != nil {
			return nil, err
		}
		for _, m := range raw {
			var mv Move
			if err := json.Unmarshal(m, &mv); err != nil {
				return nil, fmt.Errorf("%s@%s: a move record is not valid JSON: %w", name, a, err)
			}
			out = append(out, mv)
		}
	}
	if alias == "" {
		sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	}
	return out, nil
}

// Promote points alias at version. It is a compare-and-swap on the
// alias's move log: if another move lands between reading the alias and
// writing the move, the result is a *ConflictError naming it.
func (r *Registry) Promote(ctx context.Context, name string, version int, alias, reason string) (*Move, error) {
	if err := CheckName("alias", alias); err != nil {
		return nil, err
	}
	if _, err := r.Version(ctx, name, version); err != nil {
		return nil, err
	}
	l := r.moves(name, alias)
	n, err := l.head(ctx)
	if err != nil {
		return nil, err
	}
	m := Move{Model: name, Alias: alias, Seq: n + 1, To: version, By: r.user(), At: r.now(), Reason: reason}
	if n > 0 {
		var last Move
		if err := l.get(ctx, n, &last); err != nil {
			return nil, err
		}
		m.From = last.To
	}
	return r.commit(ctx, l, m)
}

func (r *Registry) commit(ctx context.Context, l *seqLog, m Move) (*Move, error) {
	err := l.create(ctx, m.Seq, m)
	if errors.Is(err, store.ErrExists) {
		var winner Move
		if gerr := l.get(ctx, m.Seq, &winner); gerr != nil {
			return nil, fmt.Errorf("%s@%s was moved by someone else at the same moment; your move was not applied (reading theirs: %w)", m.Model, m.Alias, gerr)
		}
		fix := fmt.Sprintf("check `berth model history %s --alias %s`, then promote again if you still want version %d", m.Model, m.Alias, m.To)
		return nil, problem.Errorf(fix, "%w", &ConflictError{Wanted: m, Winner: winner})
	}
	if err != nil {
		return nil, fmt.Errorf("moving %s@%s: %w", m.Model, m.Alias, err)
	}
	return &m, nil
}

// Rollback moves alias back to where it pointed before its last move
// that has not been rolled back: rolling back twice goes two moves back,
// not forth and back again. It is a move like any other, in the history.
func (r *Registry) Rollback(ctx context.Context, name, alias, reason string) (*Move, error) {
	moves, err := r.History(ctx, name, alias)
	if err != nil {
		return nil, err
	}
	if len(moves) == 0 {
		return nil, problem.Errorf(fmt.Sprintf("promote a version with `berth model promote %s VERSION --alias %s`", name, alias), "%s@%s has never been moved, so there is nothing to roll back", name, alias)
	}
	undone := map[int]bool{}
	var target *Move
	for i := len(moves) - 1; i >= 0; i-- {
		m := &moves[i]
		if m.Undoes > 0 {
			undone[m.Undoes] = true
			continue
		}
		if !undone[m.Seq] {
			target = m
			break
		}
	}
	if target == nil || target.From == 0 {
		return nil, problem.Errorf(fmt.Sprintf("promote the version you want with `berth model promote %s VERSION --alias %s`", name, alias), "%s@%s has no earlier version to roll back to: its first move pointed it at %d", name, alias, moves[0].To)
	}
	if _, err := r.Version(ctx, name, target.From); err != nil {
		return nil, fmt.Errorf("rolling %s@%s back to %d: %w", name, alias, target.From, err)
	}
	last := moves[len(moves)-1]
	if reason == "" {
		reason = fmt.Sprintf("rollback of move %d (%d → %d)", target.Seq, target.From, target.To)
	}
	m := Move{Model: name, Alias: alias, Seq: last.Seq + 1, From: last.To, To: target.From, By: r.user(), At: r.now(), Reason: reason, Undoes: target.Seq}
	return r.commit(ctx, r.moves(name, alias), m)
}
