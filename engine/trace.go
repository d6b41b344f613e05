package engine

import "context"

// StepTracer observes each step (layer) of a Transform: a tracer makes a
// span of it, a child of the span in the call's context. The engine knows
// nothing of the tracing library; nil (the default) costs nothing.
type StepTracer interface {
	// StartStep is called before step runs for c. The layer runs with
	// the returned context; span.End is called once when the step is
	// done.
	StartStep(ctx context.Context, c *Call, step string) (context.Context, StepSpan)
}

// StepSpan is one step being traced.
type StepSpan interface {
	End(StepReport)
}

// StepReport is what a step did.
type StepReport struct {
	// Rewrites is how many rewrites the layer planned; Artifacts how many
	// values it stored.
	Rewrites, Artifacts int
	// Changed says the step changed the result.
	Changed bool
	// Err is the step's failure (its plan or execution), nil when it
	// ran; a rewrite's own failures are counted in Failures.
	Err      error
	Failures int
}
