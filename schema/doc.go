// Package schema treats a jsonv.Value as a JSON Schema (draft 2020-12): it
// reads schema files with errors that name the file and the JSON path, walks
// subschemas, knows Vibe's keyword conventions (`_` thinking fields, `$`
// metrics, engine keywords such as `references`), and validates instances
// with github.com/santhosh-tekuri/jsonschema/v6.
//
// Error and ErrorList are the located errors every Vibe package reports:
// each prints as "FILE: /json/path: message", one per line.
package schema
