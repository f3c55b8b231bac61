package process

// The names of the process runtime on Temporal that are its own; those
// every Vibe workflow shares (the task queue, the process workflow's type,
// the activities, the search attributes) are package durable's.
const (
	// FireAndForgetName is the workflow type that runs one fire-and-forget
	// action (Workflows.FireAndForget).
	FireAndForgetName = "vibe.FireAndForget"

	// QueryView is the query that returns a process's View.
	QueryView = "view"
	// UpdateAnswer is the update that carries a person's answer to a USER
	// chunk.
	UpdateAnswer = "answer"
)
