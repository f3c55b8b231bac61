package request

// The names of the Vessel runtime on Temporal, in one place. A request's
// model calls and actions are process's activities (durable.FillName,
// durable.ActionName) and its launches process's workflows.
const (
	// WorkflowName is the workflow type of a Vessel request
	// (Workflows.Request); a delegate's sub-request is one too.
	WorkflowName = "vibe.Vessel"
	// DecideName is the activity type of a request's decision
	// (Activities.Decide).
	DecideName = "vibe.Decide"
	// DelegateName is the activity type that loads a delegate and prepares
	// its sub-request (Activities.Delegate).
	DelegateName = "vibe.Delegate"

	// QueryView is the query that returns a request as far as it has run
	// (View): its decision, the calls finished so far, each instance's
	// state, its usage.
	QueryView = "view"
	// MemoVessel is the memo field that names a request's Vessel, for
	// listings.
	MemoVessel = "vessel"
)

// Types of the application errors (temporal.ApplicationError.Type) a
// request's own activities fail with, not retried; its model calls and
// actions fail with process's (durable.ErrTypeInvalidAnswer, …).
const (
	// ErrTypeBadDecision: the decision could not be made or read.
	ErrTypeBadDecision = "BadDecision"
	// ErrTypeBadDelegate: a delegate could not be loaded or prepared.
	ErrTypeBadDelegate = "BadDelegate"
)
