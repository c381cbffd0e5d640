package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"berth.io/berth/internal/model/store"
)

// seqLog is an append-only sequence of immutable JSON records, the shape
// of both a model's versions and an alias's moves:
//
//	DIR/0000000001.json ...   record N, created only if absent (If-None-Match)
//	DIR/HEAD                  {"seq": N}, moved forward only, by compare-and-swap (If-Match)
//	DIR/packed/0000000001.json records 1..100 in one object, written once all exist
//	DIR/gone/0000000007       record 7 was deleted (gc)
//
// Creating record N+1 is the commit point: of two writers who both read
// N, exactly one creates N+1. HEAD is a hint that saves a listing; it can
// lag (a writer that died between the two writes), so readers probe past
// it. Every object here is written once and never changes except HEAD, so
// the packed pages are an index that cannot go stale: they hold facts that
// stay true, and deletions are facts of their own (gone/).
type seqLog struct {
	st  store.Store
	dir string
	// pack, when set, shrinks a record for the packed pages (a version's
	// summary without its file list).
	pack func(json.RawMessage) json.RawMessage
}

const pageSize = 100

func (l *seqLog) key(seq int) string     { return fmt.Sprintf("%s/%010d.json", l.dir, seq) }
func (l *seqLog) page(lo int) string     { return fmt.Sprintf("%s/packed/%010d.json", l.dir, lo) }
func (l *seqLog) goneKey(seq int) string { return fmt.Sprintf("%s/gone/%010d", l.dir, seq) }
func (l *seqLog) headKey() string        { return l.dir + "/HEAD" }

type headRecord struct {
	Seq int `json:"seq"`
}

// head is the last record's sequence number (0 for an empty log).
func (l *seqLog) head(ctx context.Context) (int, error) {
	n := 0
	data, _, err := l.st.ReadAll(ctx, l.headKey())
	switch {
	case err == nil:
		var h headRecord
		if err := json.Unmarshal(data, &h); err != nil {
			return 0, fmt.Errorf("%s: %w", l.headKey(), err)
		}
		n = h.Seq
	case !errors.Is(err, store.ErrNotExist):
		return 0, err
	}
	for {
		if _, err := l.st.Stat(ctx, l.key(n+1)); err != nil {
			if errors.Is(err, store.ErrNotExist) {
				if gone, gerr := l.isGone(ctx, n+1); gerr == nil && gone {
					n++
					continue
				}
				return n, nil
			}
			return 0, err
		}
		n++
	}
}

// create writes record seq if no record has that number yet; else
// store.ErrExists.
func (l *seqLog) create(ctx context.Context, seq int, rec any) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if _, err := l.st.Create(ctx, l.key(seq), data); err != nil {
		return err
	}
	return l.advance(ctx, seq)
}

// advance moves HEAD forward to seq unless it is already past it.
func (l *seqLog) advance(ctx context.Context, seq int) error {
	data, _ := json.Marshal(headRecord{Seq: seq})
	for {
		cur, etag, err := l.st.ReadAll(ctx, l.headKey())
		if errors.Is(err, store.ErrNotExist) {
			if _, err := l.st.Create(ctx, l.headKey(), data); errors.Is(err, store.ErrExists) {
				continue
			} else {
				return err
			}
		}
		if err != nil {
			return err
		}
		var h headRecord
		if json.Unmarshal(cur, &h) == nil && h.Seq >= seq {
			return nil
		}
		if _, err := l.st.Replace(ctx, l.headKey(), data, etag); errors.Is(err, store.ErrChanged) {
			continue
		} else {
			return err
		}
	}
}

// get reads record seq into rec.
func (l *seqLog) get(ctx context.Context, seq int, rec any) error {
	data, _, err := l.st.ReadAll(ctx, l.key(seq))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, rec); err != nil {
		return fmt.Errorf("%s in %s is not a valid record: %w", l.key(seq), l.st, err)
	}
	return nil
}

func (l *seqLog) isGone(ctx context.Context, seq int) (bool, error) {
	_, err := l.st.Stat(ctx, l.goneKey(seq))
	if errors.Is(err, store.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// markGone records that seq was deleted, then deletes it.
func (l *seqLog) markGone(ctx context.Context, seq int) error {
	if _, err := l.st.Create(ctx, l.goneKey(seq), []byte("{}")); err != nil && !errors.Is(err, store.ErrExists) {
		return err
	}
	return l.st.Delete(ctx, l.key(seq))
}

// all returns every live record in order, as raw JSON (packed form where a
// page exists), reading whole pages where it can and packing the full
// pages that have none yet.
func (l *seqLog) all(ctx context.Context) ([]json.RawMessage, error) {
	n, err := l.head(ctx)
	if err != nil || n == 0 {
		return nil, err
	}
	gone := map[int]bool{}
	objs, err := l.st.List(ctx, l.dir+"/gone/")
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if seq, err := strconv.Atoi(o.Key[len(o.Key)-10:]); err == nil {
			gone[seq] = true
		}
	}
	pages := (n + pageSize - 1) / pageSize
	out := make([][]json.RawMessage, pages)
	errs := make([]error, pages)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for p := range pages {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[p], errs[p] = l.readPage(ctx, p*pageSize+1, min((p+1)*pageSize, n), gone)
		}()
	}
	wg.Wait()
	var recs []json.RawMessage
	for p := range pages {
		if errs[p] != nil {
			return nil, errs[p]
		}
		for i, r := range out[p] {
			if r != nil && !gone[p*pageSize+1+i] {
				recs = append(recs, r)
			}
		}
	}
	return recs, nil
}

// readPage reads records lo..hi, from their packed page when there is one.
func (l *seqLog) readPage(ctx context.Context, lo, hi int, gone map[int]bool) ([]json.RawMessage, error) {
	full := hi-lo+1 == pageSize
	if full {
		data, _, err := l.st.ReadAll(ctx, l.page(lo))
		if err == nil {
			var page []json.RawMessage
			if err := json.Unmarshal(data, &page); err == nil && len(page) == pageSize {
				return page, nil
			}
		} else if !errors.Is(err, store.ErrNotExist) {
			return nil, err
		}
	}
	page := make([]json.RawMessage, hi-lo+1)
	for seq := lo; seq <= hi; seq++ {
		if gone[seq] {
			continue
		}
		data, _, err := l.st.ReadAll(ctx, l.key(seq))
		if errors.Is(err, store.ErrNotExist) {
			continue // deleted after the gone/ listing
		}
		if err != nil {
			return nil, err
		}
		if l.pack != nil {
			data = l.pack(data)
		}
		page[seq-lo] = data
	}
	if full {
		if data, err := json.Marshal(page); err == nil {
			// Another reader may have packed it first: same facts.
			if _, err := l.st.Create(ctx, l.page(lo), data); err != nil && !errors.Is(err, store.ErrExists) {
				return nil, err
			}
		}
	}
	return page, nil
}
