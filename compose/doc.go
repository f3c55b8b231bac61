// Package compose puts Instructions together the three ways SPEC §4 names.
//
// Merge (macros and mixins) is Flatten: every "$ref" is resolved — local
// pointers, registry URIs, "#name" fragments — and every "allOf" is folded
// into one plain schema with no "allOf", "$ref" or mixin slot left. A mixin
// is an allOf item with a property named "default": the slot. The next item
// with properties fills the slot, in the slot's place and in its own order,
// so allOf [Introspect_Mixin, Loop_Mixin, {properties: {default: X}}] gives
// _considerations, the loop's fields, X's properties, _feedback. A mixin's
// own title and description describe the mixin, not the result, and are
// dropped. Other items merge like JavaScript objects: a later description is
// appended after a newline, a later title replaces an earlier one, and two
// items that disagree on an assertion keyword ("type", "const", …) are an
// error. A property defined twice is merged when the definitions agree on
// every keyword they share, and otherwise an error naming both sources.
// Keywords next to a "$ref" override the target's, except "description",
// which is appended to the target's after a newline.
//
// Pipelines are Pipeline: "prompt" | A | B | C, or C(B(A(prompt))), becomes
// one schema whose properties step1_a, step2_b, … each reference the step
// before unless the instruction declares its own references.
//
// Implicit composition is Toolset: instructions presented side by side,
// each flattened, none merged.
//
// Split applies the `_` / `$` convention to a filled value: thinking fields
// and metrics come off, the output stays.
//
// Composition is bounded: a pipeline has at most MaxSteps calls, one
// composition inlines at most MaxInlined values, and every function stops
// when its context ends. Its cost is linear in the pipeline's length: an
// instruction called by many steps is found and flattened once, and a
// "$ref" is resolved once per document.
package compose
