package blueprint

import (
	"fmt"
	"testing"
)

func TestZZScratch(t *testing.T) {
	for _, s := range []string{
		"a: 1\nb: 2\nc: [x\nd: 4\n",
		"a: 1\nb: 2\nc: {x: 1\nd: 4\n",
		"a: 1\nb: 2\nc: \"x\nd: 4\n",
		"a: 1\nb: 2\n  c: 3\nd: 4\n",
		"a: 1\nb: 2\nc: d: 3\ne: 4\n",
		"a: 1\nb:\n  - x\n  y: 2\nd: 4\n",
		"a: 1\nb: 2\n\tc: 3\n",
		"a: 1\nb: 2\nc: @x\n",
		"a: 1\nb: 2\nc: x\n- y\n",
		"a: 1\nb: 2\nc: 'x\n",
		"a: 1\nb: 2\nc: *x\n",
		"a: 1\nb: &x 2\nc: &x 3\n",
		"a: 1\nb: 2\nc: !!int x\n",
		"a: 1\nb: 2\nc: !!binary \"%%%\"\n",
		"a: 1\nb: 2\nc: ]\n",
		"a: 1\nb: 2\n%YAML 1.1\n",
		"a: 1\n\xff\xfe\n",
	} {
		_, err := parseYAML([]byte(s))
		fmt.Printf("%q\n   %v\n", s, err)
		if err != nil { fmt.Printf("   %#v\n", syntaxProblem("f", err)) }
	}
}
