package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"berth.io/berth/internal/model"
	"berth.io/berth/internal/problem"
)

func newModelPullCommand(o *modelOptions) *cobra.Command {
	var (
		to       string
		watch    bool
		interval time.Duration
		opts     model.PullOptions
	)
	cmd := &cobra.Command{
		Use:   "pull REF --to DIR [--watch]",
		Short: "Download a version, verify every file, and make it DIR/current atomically",
		Long: `Download the version REF names (NAME, NAME:VERSION or NAME@ALIAS) into
DIR/versions/VERSION, files in parallel, resuming after a cut connection
and across runs (DIR/.partial keeps what was fetched). Every file's
sha256 is checked; a corrupt or truncated file fails the pull and is
never made current. Then DIR/current, a symlink, is swapped to the new
version by renaming a new link over it: a reader that resolves
DIR/current once sees the old version or the new one, never a mix.

This is what the init container berth's admission policy adds runs. With
--watch it keeps following REF (an alias, for a volume shared by
replicas): each time the alias moves it pulls, verifies and swaps, and
keeps the previous version for readers still on it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return problem.New("name the directory the model goes to, as --to /models", "pull needs --to DIR")
			}
			r, err := o.registry()
			if err != nil {
				return err
			}
			ref, err := model.ParseRef(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			report := func(res *model.PullResult, elapsed time.Duration) {
				if o.output == "json" {
					o.json(res)
					return
				}
				if !res.Swapped {
					fmt.Fprintf(o.Out, "%s is current in %s\n", res.Version.Ref(), to)
					return
				}
				resumed := ""
				if res.Resumed > 0 {
					resumed = fmt.Sprintf(", %s resumed from an earlier pull", bytesOf(res.Resumed))
				}
				fmt.Fprintf(o.Out, "pulled %s into %s: %d files, %s in %s (%s/s)%s, verified; current → versions/%d\n", res.Version.Ref(), to,
					res.Version.FileCount, bytesOf(res.Fetched), elapsed.Round(time.Millisecond), bytesOf(rate(res.Fetched, elapsed)), resumed, res.Version.Version)
			}
			if watch {
				last := model.Current(to)
				r.Watch(ctx, ref, to, interval, opts, func(res *model.PullResult, err error) {
					if err != nil {
						fmt.Fprintf(o.ErrOut, "%s: %v\n", time.Now().UTC().Format(time.RFC3339), err)
						return
					}
					if res.Version.Version != last {
						report(res, 0)
						last = res.Version.Version
					}
				})
				return nil
			}
			opts.Meter = &model.Meter{}
			stop := o.progress("pulling "+ref.String(), opts.Meter)
			res, err := r.Pull(ctx, ref, to, opts)
			elapsed := stop()
			if err != nil {
				return err
			}
			report(res, elapsed)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&to, "to", "", "directory to pull into (DIR/current is the model)")
	f.BoolVar(&watch, "watch", false, "keep following REF, pulling and swapping each time it moves")
	f.DurationVar(&interval, "interval", 10*time.Second, "with --watch, how often to look at REF")
	f.IntVar(&opts.Parallel, "parallel", 4, "files downloaded at once")
	f.IntVar(&opts.Retries, "retries", 5, "times a file's download resumes after a failure")
	return cmd
}
