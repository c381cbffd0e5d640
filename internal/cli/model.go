package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"berth.io/berth/internal/model"
	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/problem"
)

// modelOptions are the flags every `berth model` command shares.
type modelOptions struct {
	Streams
	kube   *kubeFlags
	store  string
	output string
}

func newModelCommand(s Streams, kube *kubeFlags) *cobra.Command {
	o := &modelOptions{Streams: s, kube: kube}
	cmd := &cobra.Command{
		Use:   "model",
		Short: "The model registry and artifact store: push, promote, roll back, pull",
		Long: `Models live in an object store, content-addressed (one copy of each
file), with a registry in the same store: versions with their files,
metrics, parameters and source, and aliases (production, staging) that
point at versions. Moving an alias is a compare-and-swap and every move is
kept, so rolling back is moving a pointer and the history shows who moved
what, when and why.

The store is --store, else $BERTH_MODEL_STORE, else file://$BERTH_HOME/models.
s3://BUCKET/PREFIX reads the environment as the AWS SDKs and KServe do:
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION,
AWS_ENDPOINT_URL or S3_ENDPOINT (R2, MinIO, GCS), S3_USE_HTTPS=0,
S3_VERIFY_SSL=0, AWS_CA_BUNDLE, S3_USER_VIRTUAL_BUCKET=true.

A reference is NAME (the latest version), NAME:VERSION or NAME@ALIAS.`,
	}
	cmd.PersistentFlags().StringVar(&o.store, "store", "", "model store: s3://BUCKET/PREFIX or file://DIR (default $BERTH_MODEL_STORE, else file://$BERTH_HOME/models)")
	cmd.PersistentFlags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	cmd.AddCommand(
		newModelPushCommand(o), newModelListCommand(o), newModelShowCommand(o),
		newModelPromoteCommand(o, false), newModelPromoteCommand(o, true),
		newModelHistoryCommand(o), newModelDiffCommand(o), newModelPullCommand(o), newModelGCCommand(o),
	)
	return cmd
}

// registry opens the store the flags and environment name.
func (o *modelOptions) registry() (*model.Registry, error) {
	if o.output != "text" && o.output != "json" {
		return nil, fmt.Errorf("-o %s: use text or json", o.output)
	}
	url := o.store
	if url == "" {
		url = os.Getenv("BERTH_MODEL_STORE")
	}
	if url == "" {
		url = "file://" + filepath.Join(berthHome(), "models")
	}
	st, err := store.Open(url)
	if err != nil {
		return nil, err
	}
	return &model.Registry{Store: st}, nil
}

func (o *modelOptions) json(v any) error {
	enc := json.NewEncoder(o.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newModelPushCommand(o *modelOptions) *cobra.Command {
	var metrics, params []string
	var source string
	var parallel int
	cmd := &cobra.Command{
		Use:   "push NAME PATH [--metric K=V]... [--param K=V]... [--source REF]",
		Short: "Store a file or directory as the model's next version",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := o.registry()
			if err != nil {
				return err
			}
			po := model.PushOptions{Source: source, Parallel: parallel, Meter: &model.Meter{}, Params: map[string]string{}, Metrics: map[string]float64{}}
			for _, kv := range metrics {
				k, v, ok := strings.Cut(kv, "=")
				f, err := strconv.ParseFloat(v, 64)
				if !ok || k == "" || err != nil {
					return fmt.Errorf("--metric %q: write NAME=NUMBER, as --metric auc=0.91", kv)
				}
				po.Metrics[k] = f
			}
			for _, kv := range params {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("--param %q: write NAME=VALUE, as --param lr=3e-4", kv)
				}
				po.Params[k] = v
			}
			stop := o.progress("pushing "+args[0], po.Meter)
			res, err := r.Push(cmd.Context(), args[0], args[1], po)
			elapsed := stop()
			if err != nil {
				return err
			}
			if o.output == "json" {
				return o.json(res)
			}
			fmt.Fprintf(o.Out, "pushed %s to %s: %d files, %s in %s (%s/s); %s already stored\n", res.Version.Ref(), r.Store,
				res.Version.FileCount, bytesOf(res.Version.Size), elapsed.Round(time.Millisecond), bytesOf(rate(res.Uploaded, elapsed)), bytesOf(res.Reused))
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&metrics, "metric", nil, "a metric of this version, NAME=NUMBER (repeatable)")
	cmd.Flags().StringArrayVar(&params, "param", nil, "a parameter of this version, NAME=VALUE (repeatable)")
	cmd.Flags().StringVar(&source, "source", "", "where the model came from: a git commit, a training run")
	cmd.Flags().IntVar(&parallel, "parallel", 4, "files uploaded at once")
	return cmd
}

func newModelListCommand(o *modelOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list [NAME]",
		Short: "List the models, or one model's versions and aliases",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := o.registry()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if len(args) == 0 {
				names, err := r.Models(ctx)
				if err != nil {
					return err
				}
				if o.output == "json" {
					return o.json(names)
				}
				if len(names) == 0 {
					fmt.Fprintf(o.Out, "no models in %s\n", r.Store)
				}
				for _, n := range names {
					fmt.Fprintln(o.Out, n)
				}
				return nil
			}
			versions, err := r.Versions(ctx, args[0])
			if err != nil {
				return err
			}
			aliases, err := r.Aliases(ctx, args[0])
			if err != nil {
				return err
			}
			if o.output == "json" {
				return o.json(map[string]any{"versions": versions, "aliases": aliases})
			}
			if len(versions) == 0 {
				return problem.Errorf(fmt.Sprintf("push one with `berth model push %s PATH`, or check --store", args[0]), "model %s has no versions in %s", args[0], r.Store)
			}
			at := map[int][]string{}
			for _, a := range aliases {
				at[a.To] = append(at[a.To], "@"+a.Alias)
			}
			w := newTable(o.Out, "VERSION", "CREATED", "BY", "FILES", "SIZE", "METRICS", "ALIASES")
			for _, v := range versions {
				w.row(strconv.Itoa(v.Version), v.Created.Format("2006-01-02 15:04"), v.CreatedBy, strconv.Itoa(v.FileCount), bytesOf(v.Size), metricsOf(v.Metrics), strings.Join(at[v.Version], " "))
			}
			return w.flush()
		},
	}
}

func newModelShowCommand(o *modelOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME[:VERSION|@ALIAS]",
		Short: "Show a version: files with digests, metrics, parameters, source",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := o.registry()
			if err != nil {
				return err
			}
			ref, err := model.ParseRef(args[0])
			if err != nil {
				return err
			}
			v, err := r.Resolve(cmd.Context(), ref)
			if err != nil {
				return err
			}
			if o.output == "json" {
				return o.json(v)
			}
			fmt.Fprintf(o.Out, "%s\ncreated  %s by %s\n", v.Ref(), v.Created.Format(time.RFC3339), v.CreatedBy)
			if v.Source != "" {
				fmt.Fprintf(o.Out, "source   %s\n", v.Source)
			}
			fmt.Fprintf(o.Out, "size     %s in %d files\n", bytesOf(v.Size), v.FileCount)
			for _, k := range slices.Sorted(maps.Keys(v.Metrics)) {
				fmt.Fprintf(o.Out, "metric   %s = %g\n", k, v.Metrics[k])
			}
			for _, k := range slices.Sorted(maps.Keys(v.Params)) {
				fmt.Fprintf(o.Out, "param    %s = %s\n", k, v.Params[k])
			}
			w := newTable(o.Out, "FILE", "SIZE", "DIGEST")
			for _, f := range v.Files {
				w.row(f.Path, bytesOf(f.Size), f.Digest)
			}
			return w.flush()
		},
	}
}

func newModelHistoryCommand(o *modelOptions) *cobra.Command {
	var alias string
	cmd := &cobra.Command{
		Use:   "history NAME [--alias ALIAS]",
		Short: "Every move of the model's aliases: from, to, who, when, why",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := o.registry()
			if err != nil {
				return err
			}
			moves, err := r.History(cmd.Context(), args[0], alias)
			if err != nil {
				return err
			}
			if o.output == "json" {
				return o.json(moves)
			}
			if len(moves) == 0 {
				fmt.Fprintf(o.Out, "no alias of %s has been moved\n", args[0])
				return nil
			}
			w := newTable(o.Out, "ALIAS", "MOVE", "FROM", "TO", "BY", "AT", "REASON")
			for _, m := range moves {
				from := "-"
				if m.From > 0 {
					from = strconv.Itoa(m.From)
				}
				w.row("@"+m.Alias, strconv.Itoa(m.Seq), from, strconv.Itoa(m.To), m.By, m.At.Format("2006-01-02 15:04:05"), m.Reason)
			}
			return w.flush()
		},
	}
	cmd.Flags().StringVar(&alias, "alias", "", "only this alias's moves")
	return cmd
}

func newModelDiffCommand(o *modelOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "diff NAME V1 V2",
		Short: "Compare two versions' metrics, parameters and files",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := o.registry()
			if err != nil {
				return err
			}
			var vs [2]*model.Version
			for i, a := range args[1:] {
				ref, err := model.ParseRef(args[0] + refSep(a) + a)
				if err != nil {
					return err
				}
				if vs[i], err = r.Resolve(cmd.Context(), ref); err != nil {
					return err
				}
			}
			d := model.Compare(vs[0], vs[1])
			if o.output == "json" {
				return o.json(d)
			}
			d.Write(o.Out)
			return nil
		},
	}
}

// refSep lets diff take 3, v3 or @production for a version.
func refSep(v string) string {
	if strings.HasPrefix(v, "@") {
		return ""
	}
	return ":"
}

func newModelGCCommand(o *modelOptions) *cobra.Command {
	g := model.GCOptions{}
	cmd := &cobra.Command{
		Use:   "gc NAME --keep N",
		Short: "Delete old versions, never one an alias points to or pointed to within its window",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := o.registry()
			if err != nil {
				return err
			}
			res, err := r.GC(cmd.Context(), args[0], g)
			if err != nil {
				return err
			}
			if o.output == "json" {
				return o.json(res)
			}
			verb := "deleted"
			if g.DryRun {
				verb = "would delete"
			}
			fmt.Fprintf(o.Out, "%s %d versions of %s %v; kept %v\n", verb, len(res.Deleted), args[0], res.Deleted, res.Kept)
			for _, v := range slices.Sorted(maps.Keys(res.Protected)) {
				fmt.Fprintf(o.Out, "kept %s:%d: %s\n", args[0], v, res.Protected[v])
			}
			if !g.DryRun {
				fmt.Fprintf(o.Out, "deleted %d stored files no version references (%s)\n", res.Blobs, bytesOf(res.BlobBytes))
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&g.Keep, "keep", 0, "how many of the newest versions to keep (required, at least 1)")
	cmd.Flags().IntVar(&g.Window, "window", 0, "how many of each alias's latest moves protect their versions (default --keep)")
	cmd.Flags().DurationVar(&g.Grace, "grace", time.Hour, "spare unreferenced files younger than this (a push in progress uploads before it records)")
	cmd.Flags().BoolVar(&g.DryRun, "dry-run", false, "say what would be deleted, delete nothing")
	cmd.MarkFlagRequired("keep")
	return cmd
}

// progress prints bytes and rate to ErrOut every second until the
// returned stop is called, which returns the time taken.
func (o *modelOptions) progress(what string, m *model.Meter) func() time.Duration {
	start := time.Now()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				d, total := m.Done.Load(), m.Total.Load()
				el := time.Since(start)
				pct := ""
				if total > 0 {
					pct = fmt.Sprintf(" (%d%%)", d*100/total)
				}
				fmt.Fprintf(o.ErrOut, "%s: %s of %s%s, %s/s\n", what, bytesOf(d), bytesOf(total), pct, bytesOf(rate(d, el)))
			}
		}
	}()
	return func() time.Duration {
		close(done)
		<-stopped
		return time.Since(start)
	}
}

func rate(n int64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(float64(n) / d.Seconds())
}

// bytesOf writes a size in binary units, as kubectl and du -h do.
func bytesOf(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func metricsOf(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%g", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// table writes aligned columns.
type table struct {
	w    io.Writer
	rows [][]string
}

func newTable(w io.Writer, header ...string) *table { return &table{w: w, rows: [][]string{header}} }

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) flush() error {
	widths := make([]int, len(t.rows[0]))
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
			} else {
				fmt.Fprintf(&b, "%-*s  ", widths[i], c)
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}
