package architecture

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// docs are the pages whose links TestDocsLinks follows: the README,
// ARCHITECTURE.md and every page under docs/, relative to root.
func docs(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "ARCHITECTURE.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			pages = append(pages, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

var (
	// fence opens or closes a fenced code block.
	fence = regexp.MustCompile("^\\s*(```|~~~)")
	// codeSpan is inline code; prose applies it to one paragraph at a
	// time, as a span may run over a line but not a paragraph.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// link is an inline link or image, its text on one or more lines:
	// [text](target) or ![alt](target "title"). Group 1 is the target.
	link = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// heading is an ATX heading; group 1 its text.
	heading = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	// external is a target with a scheme (https:, mailto:): not checked.
	external = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// inlineLink is a link inside a heading, whose text is what counts.
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// prose is a page without its code: fenced blocks become empty lines and
// code spans spaces, so that neither yields links or headings and every
// offset keeps its line.
func prose(text string) string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if fence.MatchString(l) {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	paragraphs := strings.Split(strings.Join(lines, "\n"), "\n\n")
	for i, p := range paragraphs {
		paragraphs[i] = codeSpan.ReplaceAllStringFunc(p, func(s string) string {
			return strings.Map(func(r rune) rune {
				if r == '\n' {
					return r
				}
				return ' '
			}, s)
		})
	}
	return strings.Join(paragraphs, "\n\n")
}

// slug is the anchor GitHub gives a heading: its text (code and emphasis
// marks dropped, a link's text kept) in lower case, every character but
// letters, marks, digits, '_', '-' and spaces dropped, spaces as '-'.
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors a page's headings produce, a repeated one
// numbered as GitHub numbers it (x, x-1, x-2).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	in := false
	for _, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			in = !in
			continue
		}
		m := heading.FindStringSubmatch(l)
		if in || m == nil {
			continue
		}
		s := slug(strings.ReplaceAll(m[1], "`", ""))
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestDocsLinks fails on a relative link or image in the README,
// ARCHITECTURE.md or a page under docs/ whose file does not exist, or
// whose #anchor no heading of the target page produces.
func TestDocsLinks(t *testing.T) {
	texts := map[string]string{}
	read := func(page string) (string, error) {
		if s, ok := texts[page]; ok {
			return s, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
		if err != nil {
			return "", err
		}
		texts[page] = string(b)
		return texts[page], nil
	}
	pages := docs(t)
	checked := 0
	for _, page := range pages {
		text, err := read(page)
		if err != nil {
			t.Fatal(err)
		}
		body := prose(text)
		for _, m := range link.FindAllStringSubmatchIndex(body, -1) {
			target := body[m[2]:m[3]]
			at := fmt.Sprintf("%s:%d", page, 1+strings.Count(body[:m[0]], "\n"))
			if target == "" {
				t.Errorf("%s: a link with no target", at)
				continue
			}
			if external.MatchString(target) {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				if strings.HasPrefix(file, "/") {
					t.Errorf("%s: %s is absolute; write it relative to the page", at, target)
					continue
				}
				dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), filepath.FromSlash(file))))
				if strings.HasPrefix(dest, "../") {
					t.Errorf("%s: %s leaves the repository", at, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
					t.Errorf("%s: %s: no such file (%s)", at, target, dest)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s: %s: an anchor into a file that is not a page", at, target)
				continue
			}
			destText, err := read(dest)
			if err != nil {
				t.Errorf("%s: %s: %v", at, target, err)
				continue
			}
			if !anchors(destText)[anchor] {
				t.Errorf("%s: %s: no heading of %s gives #%s", at, target, dest, anchor)
			}
		}
	}
	t.Logf("%d pages, %d relative links", len(pages), checked)
	// A test that cannot pass on nothing: the pages link to each other.
	if len(pages) < 10 || checked < 100 {
		t.Errorf("read %d pages and %d relative links; want the README, ARCHITECTURE.md, docs/ and their links", len(pages), checked)
	}
}

// TestREADMEShowsExample keeps the README's blueprint the file beside the
// docs, whole: the file is what `berth validate` checks (internal/blueprint's
// TestDocsExamples), the README what people read.
func TestREADMEShowsExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const example = "docs/examples/ml-small.yaml"
	file, err := os.ReadFile(filepath.Join(root, example))
	if err != nil {
		t.Fatal(err)
	}
	block := "```yaml\n" + string(file) + "```\n"
	if !strings.Contains(string(readme), block) {
		t.Errorf("README.md does not show %s whole in a ```yaml block; copy the file into it", example)
	}
}

// The anchors are GitHub's: these are headings of these pages.
func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Start-up: `berth up`":                                  "start-up-berth-up",
		"Where the two provisioners differ, measured":           "where-the-two-provisioners-differ-measured",
		"A queue's depth to running workers":                    "a-queues-depth-to-running-workers",
		"`berth why` on 1,000 nodes":                            "berth-why-on-1000-nodes",
		"Rehearsal: a week of 5,000 jobs":                       "rehearsal-a-week-of-5000-jobs",
		"Settings_tuned – for [simulation](x.md)":               "settings_tuned--for-simulation",
		"Models: registry, artifact store and puller":           "models-registry-artifact-store-and-puller",
		"Nodes that stop, spot interruptions and zone failures": "nodes-that-stop-spot-interruptions-and-zone-failures",
	} {
		if got := slug(strings.ReplaceAll(text, "`", "")); got != want {
			t.Errorf("slug(%q) = %q, want %q", text, got, want)
		}
	}
	if got := anchors("# A\n## B\n```\n## C\n```\n## B\n"); fmt.Sprint(got) != "map[a:true b:true b-1:true]" {
		t.Errorf("anchors: %v", got)
	}
}
