package durable

import (
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
)

// NotHosted is the error a host's query handler (QueryItem,
// QueryItemProgram) or update handler (UpdateItemAnswer) answers for an id
// it does not hold: an application error of type ErrTypeNotHosted, whose
// message wraps notFound's text and names the id.
func NotHosted(notFound error, id string) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%v: %s", notFound, id), ErrTypeNotHosted, nil)
}

// IsNotHosted reports whether err, a query's or an update's, is a host's
// NotHosted: by the failure's type, which crosses the engine, not by its
// text.
func IsNotHosted(err error) bool {
	if qf, ok := errors.AsType[*serviceerror.QueryFailed](err); ok {
		return qf.Failure.GetApplicationFailureInfo().GetType() == ErrTypeNotHosted
	}
	if ae, ok := errors.AsType[*temporal.ApplicationError](err); ok {
		return ae.Type() == ErrTypeNotHosted
	}
	return false
}
