package export

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// A script is a bash script of cloud CLI commands, one per pool, each
// flag on a line of its own so that a diff between two exports shows
// exactly what changed.
type script struct {
	w io.Writer
}

// option is one --name value... argument. raw values are written as they
// are (for "$VARIABLE"); others are quoted when the shell needs it.
type option struct {
	name   string
	values []string
	raw    bool
}

// variable is a shell variable the user sets before running the script.
type variable struct {
	name string
	// def is the default; empty makes the variable required.
	def  string
	help string
}

func newScript(w io.Writer, head []string, vars []variable) *script {
	fmt.Fprintln(w, "#!/usr/bin/env bash")
	writeComment(w, "", head...)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "set -euo pipefail")
	fmt.Fprintln(w)
	for _, v := range vars {
		writeComment(w, "", v.help)
		if v.def == "" {
			fmt.Fprintf(w, "%s=\"${%s:?set %s}\"\n", v.name, v.name, v.name)
			continue
		}
		fmt.Fprintf(w, "%s=\"${%s:-%s}\"\n", v.name, v.name, v.def)
	}
	return &script{w: w}
}

// command writes comments, then the command with its flags.
func (s *script) command(comments []string, words string, flags []option) {
	fmt.Fprintln(s.w)
	writeComment(s.w, "", comments...)
	fmt.Fprint(s.w, words)
	for _, f := range flags {
		fmt.Fprint(s.w, " \\\n  "+f.name)
		for _, v := range f.values {
			if !f.raw {
				v = shellQuote(v)
			}
			fmt.Fprint(s.w, " "+v)
		}
	}
	fmt.Fprintln(s.w)
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:=,@%+-]+$`)

// shellQuote quotes s for bash when it holds anything but plain word
// characters.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func one(name, value string) option { return option{name: name, values: []string{value}} }
func bare(name string) option       { return option{name: name} }
func rawFlag(name, value string) option {
	return option{name: name, values: []string{value}, raw: true}
}
func many(name string, vs ...string) option { return option{name: name, values: vs} }

// heredoc writes comments, then words with doc on standard input. doc
// must end in a newline and hold no line "EOF".
func (s *script) heredoc(comments []string, words, doc string) {
	fmt.Fprintln(s.w)
	writeComment(s.w, "", comments...)
	fmt.Fprintf(s.w, "%s <<'EOF'\n%sEOF\n", words, doc)
}
