package report

import (
	"fmt"
	"io"
)

// RecordedWaitResult sets one team's waits in the rehearsal beside the
// waits its trace recorded on the cluster the trace came from, over the
// same jobs: those with a recorded wait whose pods all started in the
// rehearsal. Percentiles are by nearest rank, as the groups' are.
type RecordedWaitResult struct {
	Team string `json:"team"`
	// Jobs counts the jobs compared. Zero when none of the team's jobs
	// with a recorded wait ran: then the percentiles are zero and mean
	// nothing.
	Jobs int `json:"jobs"`
	// NeverRan counts the team's jobs with a recorded wait whose pods
	// never all started in the rehearsal (refused, or still waiting at
	// the end): they have no wait to compare and are left out.
	NeverRan int `json:"neverRan,omitempty"`
	// ReplayedP50 and ReplayedP95 are the compared jobs' waits in the
	// rehearsal; RecordedP50 and RecordedP95 the same jobs' recorded
	// waits.
	ReplayedP50 Duration `json:"replayedP50"`
	ReplayedP95 Duration `json:"replayedP95"`
	RecordedP50 Duration `json:"recordedP50"`
	RecordedP95 Duration `json:"recordedP95"`
}

// writeRecordedWaits writes the table's section of replayed against
// recorded waits to tw, a row per team; nothing when rs is empty.
func writeRecordedWaits(tw io.Writer, rs []RecordedWaitResult) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(tw, "\nRECORDED WAITS\tJOBS\tREPLAYED p50\tp95\tRECORDED p50\tp95\tNEVER RAN")
	for _, w := range rs {
		cells := [4]string{"-", "-", "-", "-"}
		if w.Jobs > 0 {
			cells = [4]string{short(w.ReplayedP50), short(w.ReplayedP95), short(w.RecordedP50), short(w.RecordedP95)}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\n", w.Team, w.Jobs, cells[0], cells[1], cells[2], cells[3], w.NeverRan)
	}
}
