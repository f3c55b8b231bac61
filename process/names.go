package process

import "go.temporal.io/sdk/temporal"

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
	// ActionsName is the activity type that runs many processes' calls of
	// one step's action at once, each with its own idempotency key
	// (Activities.RunActions): a batch's group runs its items' actions so.
	ActionsName = "vibe.Actions"
	// CheckName is the local activity that validates a value against a
	// schema (CheckValue).
	CheckName = "vibe.Check"

	// MemoProcess is the memo field that names a process workflow's
	// process, for listings.
	MemoProcess = "process"

	// QueryView is the query that returns a process's View.
	QueryView = "view"
	// UpdateAnswer is the update that carries a person's answer to a USER
	// chunk.
	UpdateAnswer = "answer"

	// A hosted process — one that runs in a workflow hosting many (a
	// batch's item in its group's), not a workflow of its own — is read
	// and answered through its host's workflow by its id (Client.Hosts
	// finds the host):
	//
	// QueryItem returns the hosted process's Info (an id argument).
	QueryItem = "item"
	// QueryItemProgram returns the compiled program a hosted process runs
	// (an id argument).
	QueryItemProgram = "item.program"
	// UpdateItemAnswer carries a person's answer to a hosted process's
	// USER chunk (an id and the answer), as UpdateAnswer does to a process.
	UpdateItemAnswer = "item.answer"
)

// Types of the application errors (temporal.ApplicationError.Type) that a
// process's activities and workflows fail with. None is retried: each says
// what has to change before trying again.
const (
	// ErrTypeNoProvider: the worker has no model provider (ErrNoProvider).
	ErrTypeNoProvider = "NoProvider"
	// ErrTypeNotRecorded: a replaying provider has no recorded answer
	// (llm.ErrNotRecorded).
	ErrTypeNotRecorded = "NotRecorded"
	// ErrTypeInvalidAnswer: the model kept breaking the schema after the
	// repair turns (llm.InvalidAnswerError); the details hold a FillOutput
	// with the turns, the usage and the requests.
	ErrTypeInvalidAnswer = "InvalidAnswer"
	// ErrTypeModelRefused: the endpoint refused the request (a 4xx other
	// than 429).
	ErrTypeModelRefused = "ModelRefused"
	// ErrTypeNoAction: no action of the step's name is registered on the
	// worker.
	ErrTypeNoAction = "NoAction"
	// ErrTypeBadInput: a step's input cannot be an action's arguments.
	ErrTypeBadInput = "BadInput"
	// ErrTypeBadSchema: a schema the engine checks against is itself
	// invalid.
	ErrTypeBadSchema = "BadSchema"
	// ErrTypeBadOutput: an action's result breaks the step's output schema.
	ErrTypeBadOutput = "BadOutput"
	// ErrTypeBadProcess: a workflow was started without what it runs.
	ErrTypeBadProcess = "BadProcess"
	// ErrTypeGroupFill: the group that fills a process's chunks failed
	// that fill.
	ErrTypeGroupFill = "GroupFill"
	// ErrTypeTooLarge: a model's answer or an action's result is past
	// MaxResultSize.
	ErrTypeTooLarge = "TooLarge"
)

// Search attributes of a process workflow, so that processes can be listed
// and filtered in Temporal's own UI and CLI (`temporal workflow list
// --query 'VibeStatus = "waiting"'`). The engine registers them on its
// namespace: pass SearchAttributes in engine.Options.
var (
	// ProcessAttribute (VibeProcess) names the Vibe process a workflow runs.
	ProcessAttribute = temporal.NewSearchAttributeKeyKeyword("VibeProcess")
	// StatusAttribute (VibeStatus) is the Vibe-level status of a process,
	// finer than Temporal's own (waiting for a person, for one).
	StatusAttribute = temporal.NewSearchAttributeKeyKeyword("VibeStatus")
	// BatchAttribute (VibeBatch) names the batch a process is an item of;
	// listings of processes leave batch items out.
	BatchAttribute = temporal.NewSearchAttributeKeyKeyword("VibeBatch")
	// SearchAttributes lists them, for engine.Options.SearchAttributes.
	SearchAttributes = []temporal.SearchAttributeKey{ProcessAttribute, StatusAttribute, BatchAttribute}
)
