package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// benchUp starts the retail cluster from empty state runs times, and
// resumes it runs times, reporting berth's own ready time and the wall
// time of `berth up --detach` (which adds the fork of the background
// process), and the resident memory after idling. file, when set, is
// the blueprint started instead of the retail template (a variant of it,
// such as one with provisioner: Karpenter).
func benchUp(berth string, runs int, idle time.Duration, file string) error {
	if idle == 0 {
		idle = 15 * time.Second
	}
	e, err := newEnv(berth)
	if err != nil {
		return err
	}
	what := "retail blueprint (6 nodes)"
	var from []string
	if file != "" {
		abs, err := filepath.Abs(file)
		if err != nil {
			return err
		}
		from, what = []string{"-f", abs}, file
	}
	defer os.RemoveAll(e.home)
	var coldReady, coldWall, resumeReady, resumeWall, rssIdle []float64
	for i := range runs {
		name := fmt.Sprintf("bench-%d", i)
		out, took, err := e.run(append([]string{"up", "--detach", "--name", name}, from...)...)
		if err != nil {
			return err
		}
		coldReady = append(coldReady, readySeconds(out))
		coldWall = append(coldWall, took.Seconds())
		if i == 0 {
			time.Sleep(idle)
			pid, err := e.pidOf(name)
			if err != nil {
				return err
			}
			rss, _, err := memory(pid)
			if err != nil {
				return err
			}
			rssIdle = append(rssIdle, rss)
		}
		if _, _, err := e.run("down", "--name", name); err != nil {
			return err
		}
		out, took, err = e.run(append([]string{"up", "--detach", "--name", name}, from...)...)
		if err != nil {
			return err
		}
		resumeReady = append(resumeReady, readySeconds(out))
		resumeWall = append(resumeWall, took.Seconds())
		if _, _, err := e.run("down", "--name", name, "--purge"); err != nil {
			return err
		}
	}
	fmt.Printf("berth up, %s, %d runs each, fsync on\nmachine: %s\n\n", what, runs, machine())
	fmt.Printf("%-28s %8s %8s %8s\n", "", "min", "median", "max")
	for _, row := range []struct {
		name string
		xs   []float64
	}{
		{"cold: ready (berth's clock)", coldReady},
		{"cold: `up --detach` wall", coldWall},
		{"resume: ready", resumeReady},
		{"resume: `up --detach` wall", resumeWall},
	} {
		s := summarize(row.xs)
		fmt.Printf("%-28s %7.2fs %7.2fs %7.2fs\n", row.name, s.min, s.median, s.max)
	}
	fmt.Printf("\nresident memory after %s idle: %.0f MiB\n", idle, rssIdle[0])
	return nil
}
