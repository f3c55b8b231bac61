// Package console is Vibe's web console, served by `vibe serve` at "/":
// the processes (a list that updates itself over server-sent events, a
// page at a time, filtered by status, name and day, with start and end
// times, durations and the totals of tokens and cost; and a page per
// process with its compiled program drawn, what each model call was sent
// and answered, repair turns, tokens, latency, how long each chunk and
// action ran, actions, state, error, and who answered each USER chunk and
// when), an inbox of the processes that wait for a person with a form
// made from each USER chunk's JSON Schema, forms that start, cancel and
// retry a process, the batches, and the Vessel requests with their
// delegates' sub-requests nested.
//
// Pages are html/template with embedded assets: no CDN, no build step, one
// small script (server-sent events, the forms' array rows). Every value
// from a model or a person is escaped by the templates, and the pages'
// Content-Security-Policy runs no script but the console's own.
//
// The console takes the API's token: a browser signs in once on /signin
// and gets an HttpOnly, SameSite=Strict session cookie, which the API's
// guard admits for the console's URLs (it implements api.Sessions); a
// client may send the bearer header instead. Every form post is checked
// against cross-site forgery: its origin must be the console's own, and it
// must carry a token bound to the session. Without a token the console is
// open on loopback, as the API is.
package console
