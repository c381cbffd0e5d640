// Package simtime owns a rehearsal's time. A rehearsal runs the real
// control plane on a Clock that berth moves: it stands still while any
// part of the process has work to do, and jumps to the next timer that is
// due once the cluster has settled. The control plane's processing then
// takes no trace time, whatever the machine, and a rehearsal's figures
// are the design's: the same at any speed, on a busy machine or an idle
// one.
//
// Three pieces:
//
//   - Clock is the virtual clock (k8s.io/utils/clock's interfaces, so that
//     the scheduler, KWOK, the Job, disruption and HPA controllers,
//     Karpenter and berth's own controllers take it as they take a real
//     one). Its one-shot timers (After, NewTimer, AfterFunc, Sleep) are
//     where it stops; tickers are polls, which tick as the clock passes
//     them and never hold it. Deadlines round up to the clock's Step (a
//     second: the resolution of the API's timestamps), so every moment of
//     a rehearsal is a whole second.
//   - Activity says whether anything is at work: requests the API server
//     is serving, callbacks of the clock's own timers, and probes that
//     components register (the scheduler's queue); the Driver adds the Go
//     runtime's own count of running and runnable goroutines, which sees
//     the work no counter names.
//   - Driver steps the clock: it waits until the cluster has settled
//     (nothing at work, twice, a quiet window apart), then advances to the
//     next deadline, never faster than its speed ceiling.
//
// Where a component cannot take the clock, it runs on wall time and the
// rehearsal's docs say what that costs (docs: the rehearsal clock).
package simtime
