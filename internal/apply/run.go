package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"berth.io/berth/api/v1alpha1"
)

// RunOptions shape Run: the plan's options, how it is carried out, and
// what the caller does between the two.
type RunOptions struct {
	Plan Options
	// Exec carries the plan out; its ForceConflicts is Plan's.
	Exec ExecOptions
	// Show, when set, is given the plan before anything changes (berth
	// apply prints it).
	Show func(*Plan)
	// GuardrailTimeout bounds the wait for the admission policies the
	// plan wrote to be in force. Zero means 30 seconds.
	GuardrailTimeout time.Duration
	// ColdStart says the API server has just started: its policies, old
	// or new, are enforced only once it has compiled them, so Run waits
	// for them whatever the plan wrote (berth up).
	ColdStart bool
}

// ErrGuardrailsPending wraps Run's error when everything was applied but
// the API server did not enforce the new admission policies within
// RunOptions.GuardrailTimeout: the policies are stored, and what is
// created until they are enforced is admitted without them.
var ErrGuardrailsPending = errors.New("the admission policies are stored but not yet in force")

// Run is the one way a plan is made and carried out, for berth apply,
// berth up (and so berth rehearse) and the tests: Compute, Show, then,
// unless the plan is empty, Execute; and when the plan wrote admission
// policies (or ColdStart) and was no dry run, a wait until the API
// server enforces them (a policy is enforced a moment after it is written, and a pod
// admitted before then would miss its class's placement). It returns the
// plan it computed, also with an error once Execute has begun.
func Run(ctx context.Context, cl Client, bp *v1alpha1.Blueprint, o RunOptions) (*Plan, error) {
	plan, err := Compute(ctx, cl, bp, o.Plan)
	if err != nil {
		return nil, err
	}
	if o.Show != nil {
		o.Show(plan)
	}
	if !plan.Empty() {
		o.Exec.ForceConflicts = o.Plan.ForceConflicts
		if err := Execute(ctx, cl, plan, o.Exec); err != nil {
			return plan, err
		}
	}
	if o.Exec.DryRun || !(o.ColdStart || plan.ChangesGuardrails()) {
		return plan, nil
	}
	timeout := o.GuardrailTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if err := WaitForGuardrails(ctx, cl.Kube, bp, timeout); err != nil {
		return plan, fmt.Errorf("%w: %w", ErrGuardrailsPending, err)
	}
	return plan, nil
}
