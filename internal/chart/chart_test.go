package chart

import (
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
)

// wellFormed parses an SVG as XML and returns its elements by name, so a
// test looks at what a browser would draw, not at strings.
func wellFormed(t *testing.T, svg string) map[string][]xml.StartElement {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	out := map[string][]xml.StartElement{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("not well-formed SVG: %v\n%s", err, svg)
		}
		if e, ok := tok.(xml.StartElement); ok {
			out[e.Name.Local] = append(out[e.Name.Local], e)
		}
	}
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// A label is text, never markup: one that looks like SVG stays a label.
func TestLabelsAreEscaped(t *testing.T) {
	evil := `team-a"/><script>alert(1)</script>`
	for name, svg := range map[string]string{
		"bars":  string(Bars(evil, []BarGroup{{Label: evil, Values: []float64{1}, Text: func(float64) string { return evil }}})),
		"lines": string(Lines(evil, evil, func(float64) string { return evil }, []Line{{Name: evil, Points: []Point{{0, 1}, {10, 2}}}})),
		"usage": string(Usage(evil, evil, 0.5)),
		"spark": string(Spark{W: 10, H: 10, Label: evil}.Draw()),
	} {
		els := wellFormed(t, svg)
		if len(els["script"]) > 0 {
			t.Errorf("%s: a label became a <script> element:\n%s", name, svg)
		}
		if got := attr(els["svg"][0], "aria-label"); !strings.Contains(got, evil) {
			t.Errorf("%s: aria-label %q; want the label as text", name, got)
		}
	}
}

// Bars are scaled to the largest value, and a missing value has no bar.
func TestBarsScaleToTheLargest(t *testing.T) {
	svg := string(Bars("waits", []BarGroup{
		{Label: "a", Values: []float64{10, 5}, Text: func(v float64) string { return "v" }},
		{Label: "b", Values: []float64{math.NaN(), 2.5}, Text: func(v float64) string { return "v" }},
	}))
	rects := wellFormed(t, svg)["rect"]
	var widths []string
	for _, r := range rects {
		widths = append(widths, attr(r, "width"))
	}
	if got := strings.Join(widths, " "); got != "420 210 105" {
		t.Errorf("bar widths %s; want 420 210 105 (the missing value drawn without a bar)", got)
	}
}

// A step line goes across, then up or down, at each point; a flat line
// spans the chart; the y axis tops out at a round number.
func TestLinesAreSteps(t *testing.T) {
	q := 4.0
	svg := string(Lines("GPUs", "gpus", func(x float64) string { return "t" }, []Line{
		{Name: "team-a", Points: []Point{{0, 1}, {50, 3}, {100, 3}}},
		{Name: "quota", Flat: &q, Dashed: true},
	}))
	paths := wellFormed(t, svg)["path"]
	if len(paths) != 2 {
		t.Fatalf("%d paths; want 2", len(paths))
	}
	// x from 56 to 510 over 0..100; y from 208 (0) to 42 (5, the round top).
	if d := attr(paths[0], "d"); d != "M56.0,174.8 H283.0 V108.4 H510.0 V108.4" {
		t.Errorf("step path %q", d)
	}
	if d := attr(paths[1], "d"); d != "M56.0,75.2 H510.0" || attr(paths[1], "stroke-dasharray") == "" {
		t.Errorf("flat path %q, dashed %q", d, attr(paths[1], "stroke-dasharray"))
	}
	if got := string(Lines("none", "", nil, nil)); got != "" {
		t.Errorf("a chart without points drew %q", got)
	}
}

// A usage bar's fill is the fraction of its width, at most all of it,
// and its class says the level.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		f            float64
		width, class string
	}{{0.5, "80", "fill ok"}, {0.85, "136", "fill high"}, {1.5, "160", "fill full"}} {
		rects := wellFormed(t, string(Usage("x", "y", tc.f)))["rect"]
		if got := attr(rects[1], "width"); got != tc.width || attr(rects[1], "class") != tc.class {
			t.Errorf("Usage(%v): fill width %s class %q; want %s %q", tc.f, got, attr(rects[1], "class"), tc.width, tc.class)
		}
	}
}
