package durable

import (
	"crypto/sha256"
	"encoding/hex"

	"go.temporal.io/sdk/temporal"
)

// The names every Vibe workflow and client shares on Temporal, in one
// place: workers register them, workflows call them, clients start, query
// and list by them. Each runtime's own names (a process's query "view", a
// batch's signals) are its package's.
const (
	// TaskQueue is the task queue Vibe's workers poll: every workflow
	// task, and every activity task but a server action's (ActionQueue)
	// and a routed model call's (ModelQueue).
	TaskQueue = "vibe"
	// ActionQueuePrefix begins the task queue of an action's calls
	// (ActionQueue).
	ActionQueuePrefix = "vibe.action."
	// ModelQueuePrefix begins the task queue of a model's calls
	// (ModelQueue).
	ModelQueuePrefix = "vibe.model."
	// AnyModelQueue is the task queue of the model calls that any model
	// may answer: those of the processes and batches a client with no
	// model of its own starts (a vibe serve without --llm, which workers
	// with models join). Every worker that has a model polls it beside its
	// own model's queue (ModelQueue); a worker without a model polls
	// neither, so that such a call waits for a worker that has one rather
	// than fail on one that has none (ErrNoProvider).
	AnyModelQueue = "vibe.model"

	// ProcessWorkflow is the workflow type of a process (package process);
	// a Vessel's launch starts one as a child, with Start.
	ProcessWorkflow = "vibe.Process"
	// DirectCallWorkflow is the workflow type of a direct server call
	// (package process), started as ProcessWorkflow is.
	DirectCallWorkflow = "vibe.DirectCall"

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
	// KeepName is the local activity that keeps the replay records of a
	// process, or of a batch group's items, when they end (Keep).
	KeepName = "vibe.Keep"
	// KeepWaitingChange is the change (workflow.GetVersion) from which a
	// process keeps its replay record also as it starts to wait for a
	// person, not only when it ends: a history from before it replays
	// without that record.
	KeepWaitingChange = "vibe.KeepWaiting"
	// ToolActionQueueChange is the change (workflow.GetVersion) from which
	// a Vessel request schedules its action tools' calls on their actions'
	// task queues (ActionQueue), not its own, and records the action
	// queues of the processes it launches (Start.ActionQueues): a history
	// from before it replays on the request's queue.
	ToolActionQueueChange = "vibe.ToolActionQueue"

	// MemoProcess is the memo field that names a workflow's process, for
	// listings: a process's, a batch's and its groups'.
	MemoProcess = "process"

	// A hosted process — one that runs in a workflow hosting many (a
	// batch's item in its group's), not a workflow of its own — is read
	// and answered through its host's workflow by its id (package
	// process's Client finds the host; package batch's group answers):
	//
	// QueryItem returns the hosted process's Info (an id argument).
	QueryItem = "item"
	// QueryItemProgram returns the compiled program a hosted process runs
	// (an id argument).
	QueryItemProgram = "item.program"
	// UpdateItemAnswer carries a person's answer to a hosted process's
	// USER chunk (an id, the answer and who sent it), as a process's own
	// update "answer" does.
	UpdateItemAnswer = "item.answer"
)

// ActionQueue is the task queue of the calls of the action name: a
// worker polls it only when it has that action, so that Temporal never
// hands a call to a worker that would fail it for want of the action
// (a worker without actions, a read command's, one started with another
// actions file). A process records the queues of its steps' actions when
// it starts (Start.ActionQueues).
func ActionQueue(name string) string { return ActionQueuePrefix + name }

// Model names the model a worker's provider asks, for routing its calls
// (ModelQueue): the provider's kind ("openai", "anthropic", "replay"), the
// model, and the endpoint — a base URL, a recording's path, "" for the
// provider's own. It holds no key: two workers that ask the same model at
// the same endpoint with different keys take the same calls.
type Model struct {
	Provider string `json:"provider,omitempty"`
	Name     string `json:"name,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
}

// ModelQueue is the task queue of the model calls for m: ModelQueuePrefix
// and a short digest of m, the same wherever it is computed. A worker
// polls it only when its provider asks m, so that Temporal never hands a
// model call to a worker that would fail it for want of a model
// (ErrNoProvider) or ask another model. A process records its model's
// queue when it starts (Start.ModelQueue), a batch's group in its input;
// one started by a client with no model records AnyModelQueue.
func ModelQueue(m Model) string {
	sum := sha256.Sum256([]byte(m.Provider + "\x00" + m.Name + "\x00" + m.Endpoint))
	return ModelQueuePrefix + hex.EncodeToString(sum[:8])
}

// Types of the application errors (temporal.ApplicationError.Type) that
// the shared activities and the workflows that run them fail with. None is
// retried: each says what has to change before trying again.
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
	// ErrTypeCutOff: the model's answer was cut off at its output token
	// limit (llm.ErrCutOff).
	ErrTypeCutOff = "CutOff"
	// ErrTypeMalformedAnswer: the model's answer cannot be true (negative
	// token counts: llm.ErrMalformedAnswer).
	ErrTypeMalformedAnswer = "MalformedAnswer"
	// ErrTypeEndpointRefused: the model endpoint refuses every request
	// (401, 403, 404: a key refused, an unknown model, a wrong URL), and
	// ErrTypeEndpointDown: it was down past the worker's patience
	// (llm.EndpointError). Neither is the step's own failure (Systemic).
	ErrTypeEndpointRefused = "EndpointRefused"
	ErrTypeEndpointDown    = "EndpointDown"
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
	// ErrTypeTooLarge: a model's answer or an action's result is past
	// MaxResultSize.
	ErrTypeTooLarge = "TooLarge"
	// ErrTypeNotHosted: a query of a hosted process (QueryItem,
	// QueryItemProgram) named an id its host does not hold (NotHosted).
	ErrTypeNotHosted = "NotHosted"
)

// Search attributes of Vibe's workflows, so that they can be listed and
// filtered in Temporal's own UI and CLI (`temporal workflow list --query
// 'VibeStatus = "waiting"'`). The engine registers them on its namespace:
// pass SearchAttributes in engine.Options.
var (
	// ProcessAttribute (VibeProcess) names the Vibe process a workflow runs.
	ProcessAttribute = temporal.NewSearchAttributeKeyKeyword("VibeProcess")
	// StatusAttribute (VibeStatus) is the Vibe-level status of a process,
	// finer than Temporal's own (waiting for a person, for one).
	StatusAttribute = temporal.NewSearchAttributeKeyKeyword("VibeStatus")
	// BatchAttribute (VibeBatch) names the batch a workflow belongs to;
	// listings of processes leave a batch's workflows out.
	BatchAttribute = temporal.NewSearchAttributeKeyKeyword("VibeBatch")
	// SearchAttributes lists them, for engine.Options.SearchAttributes.
	SearchAttributes = []temporal.SearchAttributeKey{ProcessAttribute, StatusAttribute, BatchAttribute}
)
