package process

// The names of the process runtime on Temporal, in one place: workers
// register them, workflows call them, clients start and query them.
const (
	// TaskQueue is the task queue Vibe's workers poll.
	TaskQueue = "vibe"

	// WorkflowName is the workflow type of a process (Workflows.Process).
	WorkflowName = "vibe.Process"
	// DirectCallName is the workflow type of a direct server call
	// (Workflows.DirectCall).
	DirectCallName = "vibe.DirectCall"
	// FireAndForgetName is the workflow type that runs one fire-and-forget
	// action (Workflows.FireAndForget).
	FireAndForgetName = "vibe.FireAndForget"

	// FillName is the activity type of a model call (Activities.Fill).
	FillName = "vibe.Fill"
	// ActionName is the activity type of a server action (Activities.Action).
	ActionName = "vibe.Action"
	// CheckName is the local activity that validates a value against a
	// schema (CheckValue).
	CheckName = "vibe.Check"

	// QueryView is the query that returns a process's View.
	QueryView = "view"
	// UpdateAnswer is the update that carries a person's answer to a USER
	// chunk.
	UpdateAnswer = "answer"
)
