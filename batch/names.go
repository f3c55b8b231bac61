package batch

import (
	"fmt"
	"regexp"
)

// The names of the batch runtime on Temporal. Its workflows run on
// durable.TaskQueue, beside the processes they group.
const (
	// GroupName is the workflow type of a group of items (Workflows.Group):
	// it runs each item's process and fills their LLM chunks together.
	GroupName = "vibe.Group"
	// BatchName is the workflow type of a batch's record (Workflows.Batch):
	// what its groups did, for status reads.
	BatchName = "vibe.Batch"
	// FillName is the activity type of a multiplexed model call
	// (Activities.Fill).
	FillName = "vibe.FillBatch"

	// ProviderName is the workflow type of a batch's provider batches
	// (Workflows.ProviderBatches, ProviderID).
	ProviderName = "vibe.ProviderBatches"
	// SubmitName, StatusName, CancelName and CollectName are the activity
	// types of a provider batch's submission, look, cancellation and of a
	// group's reading of its answers (Activities.Submit, Status, Cancel,
	// Collect).
	SubmitName  = "vibe.ProviderSubmit"
	StatusName  = "vibe.ProviderStatus"
	CancelName  = "vibe.ProviderCancel"
	CollectName = "vibe.ProviderCollect"
	// CollectModelQueueChange is the change (workflow.GetVersion) from
	// which a group schedules the reading of a provider batch's answers
	// (CollectName) on its model's task queue (GroupInput.ModelQueue), as
	// its other model calls, not its own: a history from before it
	// replays on the group's queue.
	CollectModelQueueChange = "vibe.CollectModelQueue"
	// reportAlongChange is the change (workflow.GetVersion) from which a
	// group sends its first report to the batch's record along with its
	// items' first model calls, not before them: a history from before
	// it waits for the record's answer first.
	reportAlongChange = "vibe.group.report-along"
	// SignalProviderRequest hands a group's fill to the provider batches,
	// a ProviderRequest; SignalProviderDone tells the group its provider
	// batch ended, a ProviderDone; SignalProviderEnd tells the provider
	// batches the batch's input ended and every group finished.
	SignalProviderRequest = "vibe.provider.request"
	SignalProviderDone    = "vibe.provider.done"
	SignalProviderEnd     = "vibe.provider.end"
	// QueryProvider returns the provider batches' ProviderState.
	QueryProvider = "provider"

	// SignalGroup is what a group tells its batch when it starts and when
	// it ends, a GroupReport.
	SignalGroup = "vibe.group"
	// SignalEnd tells a batch its input ended, an End.
	SignalEnd = "vibe.end"
	// QueryStatus returns a batch's Status.
	QueryStatus = "status"
	// QueryGroup returns the index of the group that holds an input line
	// (an int argument), -1 for none.
	QueryGroup = "group"
	// QueryLines returns the line ranges of a batch's groups, as they
	// reported them ([]Lines): a batch whose record ended takes them into
	// its next record (Options.RetryFailed).
	QueryLines = "lines"
	// QueryWaiting returns the ids of a group's items that wait for a
	// person.
	QueryWaiting = "waiting"
)

// ErrTypeGroupFill is the type of the application error an item's chunk
// fails with when the group's call gave no value for it: the item's own
// part was refused after its repair turns, or the call answered for none
// of its items (temporal.ApplicationError.Type; not retried).
const ErrTypeGroupFill = "GroupFill"

// GroupID is the workflow id of group g (from 0) of a batch.
func GroupID(batch string, g int) string { return fmt.Sprintf("%s-g%d", batch, g) }

// ItemID is the process id of the item on input line line (from 1): its
// group's workflow answers for it by this id (Client.Host finds it).
func ItemID(batch string, line int) string { return fmt.Sprintf("%s-%d", batch, line) }

// MaxIDLength bounds a batch id: its workflow ids add a few characters.
const MaxIDLength = 200

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckID reports whether id may name a batch: letters, digits, '.', '_'
// and '-', starting with a letter or digit, at most MaxIDLength long.
func CheckID(id string) error {
	if len(id) > MaxIDLength || !idPattern.MatchString(id) {
		return fmt.Errorf("batch id %q: use letters, digits, '.', '_' and '-', starting with a letter or digit, at most %d characters", id, MaxIDLength)
	}
	return nil
}
