package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"berth.io/berth/internal/words"
)

// WriteTable writes the report for people: jobs per team and class,
// each team's waits beside those its trace recorded (when it recorded
// any), pools, services, cost, then the notes. It writes figures of the
// trace alone, never of the machine (the wall time it took is in the
// JSON report), so that two rehearsals of the same design print the
// same table.
func WriteTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	state := ""
	if r.Partial {
		state = " (stopped early: partial)"
	}
	fmt.Fprintf(tw, "Rehearsal of %s on %s: %s of trace time, exact to %s%s\n\n", r.Design(), r.Trace, Round(time.Duration(r.Rehearsed)), time.Duration(r.Tolerance), state)

	fmt.Fprintln(tw, "TEAM\tCLASS\tJOBS\tDONE\tFAILED\tNEVER RAN\tWAIT p50\tp95\tmax\tQUOTA-REFUSED job-h\tLOST GPU-h")
	for _, g := range r.Groups {
		p50, p95, most := short(g.WaitP50), short(g.WaitP95), short(g.WaitMax)
		if g.NeverRan == g.Jobs { // no job ran: no waits to give
			p50, p95, most = "-", "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", g.Team, g.Class, g.Jobs, g.Completed, g.Failed, g.NeverRan,
			p50, p95, most, hours(time.Duration(g.QuotaRefused).Hours()), hours(g.LostGPUHours))
	}
	if len(r.Groups) == 0 {
		fmt.Fprintln(tw, "(no training or batch jobs)")
	}
	writeRecordedWaits(tw, r.RecordedWaits)

	fmt.Fprintln(tw, "\nPOOL\tCAPACITY\tNODE-h\tPEAK NODES\tGPU-h\tALLOCATED\tIDLE\tAT ZERO")
	for _, p := range r.Pools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", p.Name, p.Capacity, hours(p.NodeHours), p.PeakNodes, hours(p.GPUHours), hours(p.GPUHoursAllocated), hours(p.GPUHoursIdle), short(p.AtZero))
	}

	if len(r.Services) > 0 {
		fmt.Fprintln(tw, "\nSERVICE\tTEAM\tCLASS\tPEAK RPS\tREPLICAS mean\tpeak\tMIN AVAILABLE\tBELOW BUDGET")
		for _, s := range r.Services {
			if s.Refused != "" {
				fmt.Fprintf(tw, "%s\t%s\t%s\trefused: %s\n", s.Name, s.Team, s.Class, s.Refused)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%g\t%.1f\t%d\t%d\t%s\n", s.Name, s.Team, s.Class, s.PeakRPS, s.MeanReplicas, s.PeakReplicas, s.MinAvailable, short(s.BelowBudget))
		}
	}
	if len(r.Storage) > 0 {
		fmt.Fprintln(tw, "\nSTORAGE CLASS\tVOLUMES\tPEAK GiB\tGiB-h\tCOST")
		for _, st := range r.Storage {
			cost := "- (no pricePerGiBMonth)"
			if st.Cost != nil {
				cost = fmt.Sprintf("$%.2f", *st.Cost)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\n", st.Class, st.Volumes, st.PeakGiB, hours(st.GiBHours), cost)
		}
	}
	if len(r.Queues) > 0 {
		fmt.Fprintln(tw, "\nQUEUE (Kueue)\tSUSPENDED job-h\tmax\tGPU-h BORROWED\tLENT\tPREEMPTED by reclaim\tpriority\tfair sharing")
		for _, q := range r.Queues {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", q.Team, hours(time.Duration(q.Suspended).Hours()), short(q.SuspendedMax),
				hours(q.BorrowedGPUHours), hours(q.LentGPUHours), q.PreemptedReclaim, q.PreemptedPriority, q.PreemptedFairSharing)
		}
	}
	if line := replacementLine(r); line != "" {
		fmt.Fprintf(tw, "\n%s\n", line)
	}
	if len(r.Disruptions) > 0 {
		fmt.Fprintln(tw, "\nDISRUPTION\tAT\tPOOL\tNOTICE\tTOOK\tNODES")
		for _, d := range r.Disruptions {
			nodes := strings.Join(d.Nodes, ", ")
			switch {
			case d.Error != "":
				nodes = "failed: " + d.Error
			case nodes == "":
				nodes = "(none up)"
			}
			notice, took := "-", "-"
			if d.Kind == KindInterruption {
				notice = short(d.Notice)
			} else if d.Took > 0 {
				took = short(d.Took)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Kind, short(d.At), d.Pool, notice, took, nodes)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Cost != nil {
		if err := writeCost(w, r.Cost); err != nil {
			return err
		}
	}

	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	refused := 0
	for _, j := range r.Jobs {
		if j.State == Refused {
			if refused == 0 {
				fmt.Fprintln(w, "\nRefused by admission:")
			}
			refused++
			fmt.Fprintf(w, "  %s %s/%s: %s\n", j.Kind, j.Team, j.Name, strings.ReplaceAll(j.Refused, "\n", "\n    "))
		}
	}
	return nil
}

// replacementLine says how long checkpointed training's replacement
// pods waited, held to their volumes' zones; "" when none had any.
func replacementLine(r *Report) string {
	n, pods, wait, most := replacements(r)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("Checkpointed training: %d of its Jobs had %d replacement pods, each held to its checkpoint volume's zone; they waited %s to start in all (at most %s for one Job).",
		n, pods, short(Duration(wait)), short(Duration(most)))
}

// replacements sums the replacement pods of checkpointed training:
// how many Jobs had any, how many pods, their wait in all and the most
// one Job's waited.
func replacements(r *Report) (jobs, pods int, wait, most time.Duration) {
	for _, j := range r.Jobs {
		if j.ReplacementWait == nil {
			continue
		}
		jobs++
		pods += j.Replacements
		w := time.Duration(*j.ReplacementWait)
		wait += w
		most = max(most, w)
	}
	return jobs, pods, wait, most
}

// short writes a trace duration to the minute (to the second under a
// minute), without trailing zero units: 1h5m, 42s, 0s.
func short(d Duration) string { return words.Duration(Round(time.Duration(d))) }

// hours writes hours to one decimal.
func hours(h float64) string { return strconv.FormatFloat(h, 'f', 1, 64) }

// Round is how a report writes a duration: to the second under a
// minute, else to the minute.
func Round(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Minute)
}
