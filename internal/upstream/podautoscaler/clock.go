package podautoscaler

import "time"

// clockNow is the HPA controller's clock, berth's patch: time.Now until
// NewHorizontalController sets it to the Now of the clock it is given
// (a rehearsal's). A process runs one cluster, and so one HPA controller.
var clockNow = time.Now
