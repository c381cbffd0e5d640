package problem

import (
	"encoding/json"
	"errors"
	"io/fs"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{Message: "no cluster", Fix: "run berth up"}, "no cluster\nfix: run berth up"},
		{Problem{Message: "no cluster"}, "no cluster"},
		{Problem{File: "a.yaml", Line: 3, Field: "spec.zones", Message: "bad", Fix: "mend it"}, "a.yaml:3: spec.zones: bad\n    fix: mend it"},
		{Problem{File: "a.yaml", Message: "empty", Fix: "write one"}, "a.yaml: empty\n    fix: write one"},
		{Problem{File: "a.yaml", Line: 9, Field: "spec.teams[0].quota.gpu", Message: "unreachable", Fix: "lower it", Warning: true}, "a.yaml:9: warning: spec.teams[0].quota.gpu: unreachable\n    fix: lower it"},
		{Problem{Object: Object{Kind: "Deployment", Namespace: "team-a", Name: "web"}, Field: "spec.replicas", Message: "one replica", Fix: "run two"}, "Deployment team-a/web: spec.replicas: one replica\n    fix: run two"},
		{Problem{Object: Object{Kind: "Node", Name: "gpu-0"}, Message: "untainted", Fix: "taint it"}, "Node/gpu-0: untainted\n    fix: taint it"},
		{Problem{Field: "spec.pools", Message: "none", Fix: "add one"}, "spec.pools: none\n    fix: add one"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String()\n got: %q\nwant: %q", got, tc.want)
		}
		if got := (&tc.p).Error(); got != tc.want {
			t.Errorf("Error() = %q, want String()'s %q", got, tc.want)
		}
	}
}

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{Message: "m"}, `{"message":"m"}`},
		{Problem{Object: Object{Kind: "Pod", Namespace: "ns", Name: "p"}, Field: "spec", Message: "m", Fix: "f", File: "x.yaml", Line: 2, Warning: true, Err: errors.New("hidden")},
			`{"object":{"kind":"Pod","namespace":"ns","name":"p"},"field":"spec","message":"m","fix":"f","file":"x.yaml","line":2,"warning":true}`},
		{Problem{Object: Object{Kind: "Node", Name: "n"}, Message: "m", Fix: "f"}, `{"object":{"kind":"Node","name":"n"},"message":"m","fix":"f"}`},
	} {
		got, err := json.Marshal(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("json.Marshal\n got: %s\nwant: %s", got, tc.want)
		}
	}
}

func TestErrorfWraps(t *testing.T) {
	p := Errorf("check the path", "reading %s: %w", "m.bin", fs.ErrNotExist)
	if !errors.Is(p, fs.ErrNotExist) {
		t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", p)
	}
	if want := "reading m.bin: file does not exist\nfix: check the path"; p.Error() != want {
		t.Errorf("Error() = %q, want %q", p.Error(), want)
	}
	var wrapped error = &Problem{Message: "outer", Err: p}
	got, ok := As(fmtWrap(wrapped))
	if !ok || got.Message != "outer" {
		t.Errorf("As found %v, %v; want the outer problem", got, ok)
	}
	if _, ok := As(errors.New("plain")); ok {
		t.Error("As found a problem in a plain error")
	}
}

func fmtWrap(err error) error { return errors.Join(err) }

func TestListSplitsWarnings(t *testing.T) {
	l := List{{Message: "a"}, {Message: "b", Warning: true}, {Message: "c"}}
	if got := len(l.Errors()); got != 2 {
		t.Errorf("Errors() has %d, want 2", got)
	}
	if w := l.Warnings(); len(w) != 1 || w[0].Message != "b" {
		t.Errorf("Warnings() = %v, want [b]", w)
	}
	if got, want := l.Error(), "a\nwarning: b\nc"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
