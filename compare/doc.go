// Package compare tells whether two answers to the same schema are the
// same answer, field by field, by the schema's own rules: the one
// comparator that calibration (is an item answered among others answered
// as it is alone?) and replay (would a changed process answer otherwise?)
// both ask.
//
// What is compared, by default: an enum's or a const's value, a boolean,
// an integer and a null exactly; a number within a millionth of its size;
// a string that has a pattern or a format exactly; an array item by item,
// its length included; an object property by property. A free string — no
// enum, const, pattern or format — is not compared: two good answers say
// the same thing in other words. Nor are "_" thinking fields and "$"
// metrics, which are the model's notes, not its answer.
//
// A schema chooses otherwise with the engine keyword "compare" (removed
// from what a model is sent): on a property, "exact" compares it exactly,
// "text" compares a string with its case, spaces and punctuation at the
// ends set aside, "ignore" leaves it out, and a number is the tolerance
// within which two numbers are the same; on an object, an array of its
// property names compares those and no other.
package compare
