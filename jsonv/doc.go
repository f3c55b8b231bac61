// Package jsonv provides an ordered JSON value: the representation Vibe uses
// everywhere a schema or a model's answer lives.
//
// Property order in an Instruction is meaning — it is the order a model
// thinks in — and Go maps sort their keys. A Value keeps an object's members
// in the order they were read or added, keeps a number's literal text
// (so 1.50 stays 1.50 and a 30-digit id keeps every digit), and round-trips
// byte for byte through Parse and Marshal apart from whitespace.
//
// Objects and arrays are shared by reference, like JavaScript values: copying
// a Value copies a handle to the same *Object. Use Clone before changing a
// value that someone else may hold, such as a document cached by a registry.
//
// Value implements json.Marshaler and json.Unmarshaler, so it can sit in
// structs encoded by encoding/json (Temporal payloads, HTTP bodies) without
// losing order. Parsing and encoding are built on jsontext from
// github.com/go-json-experiment/json (encoding/json/v2 from Go 1.27).
//
// Pointer addresses a value by RFC 6901 JSON Pointer; Walk visits a value
// depth first in document order.
package jsonv
