// Package throttle limits how fast a client may guess a secret: the
// console's sign-in and the API's bearer header take the same token, and
// each gives a client a few wrong guesses, then one more every so often.
package throttle
