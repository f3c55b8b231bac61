// Package registry finds the documents Vibe's schemas refer to: instructions,
// processes, macros and stored requests, addressed by "aug:" URIs.
//
// A registry is a directory tree of .json files, filled in from Go with Add
// as well. The mapping from URI to file is a contract that tools outside
// Vibe rely on:
//
//	aug:<path>:<N>   →  <dir>/<path>@<N>.json
//	aug:<path>       →  <dir>/<path>.json, or else the highest <dir>/<path>@<N>.json
//
// A leading "/" in the path is ignored, so aug:/vibes/macros/StartProcess:1
// is vibes/macros/StartProcess@1.json. A fragment addresses a part of the
// document: "#/json/pointer" is a JSON Pointer, and "#name" is the step (the
// property) of that name anywhere in the document's "properties" — it is an
// error when no property or more than one has that name.
//
// Documents are read once and cached; they are shared, so callers Clone a
// value before changing it.
package registry
