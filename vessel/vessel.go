package vessel

import (
	"fmt"
	"slices"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// Vessel is a light agent: a system text and a toolset.
type Vessel struct {
	Name      string
	System    string
	Tools     []string // instruction (or action) URIs
	Processes []string // process URIs it may launch
	Mixins    []string // macro URIs wrapped around every tool
	// FollowUps is how many follow-up decisions ask for the instances a
	// decision left without a call (0: none); nil means DefaultFollowUps.
	FollowUps *int
	// DecisionSize is how many instances one decision request covers at
	// most: more are split over several requests, decided in parallel.
	// 0 means DefaultDecisionSize.
	DecisionSize int
	// File names the Vessel in errors.
	File string
}

// Defaults of a Vessel's decisions.
const (
	DefaultFollowUps    = 2
	DefaultDecisionSize = 100
	// MaxFollowUps and MaxEnum bound them: each follow-up is a model call,
	// and a decision's instances are an enum (MaxEnum).
	MaxFollowUps = 5
)

// Load reads a Vessel file.
func Load(file string) (*Vessel, error) {
	doc, err := schema.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return Parse(file, doc)
}

// Parse reads a Vessel from its JSON document; every problem is reported
// with the file and JSON path.
func Parse(file string, doc jsonv.Value) (*Vessel, error) {
	var errs schema.ErrorList
	v := &Vessel{File: file}
	if doc.Object() == nil {
		errs.Add(file, "", "a Vessel is an object {\"name\", \"system\", \"tools\", \"processes\", \"mixins\"}, not %s", doc.Kind())
		return nil, errs
	}
	for name, val := range doc.Members() {
		switch name {
		case "name", "system":
			if val.Kind() != jsonv.KindString {
				errs.Add(file, jsonv.PointerTo(name), "%s must be a string", name)
			}
		case "followUps":
			n, ok := val.Int()
			if !ok || n < 0 || n > MaxFollowUps {
				errs.Add(file, jsonv.PointerTo(name), "followUps must be an integer from 0 (none) to %d, not %s", MaxFollowUps, jsonv.Marshal(val))
				continue
			}
			f := int(n)
			v.FollowUps = &f
		case "decisionSize":
			n, ok := val.Int()
			if !ok || n < 1 || n > MaxEnum {
				errs.Add(file, jsonv.PointerTo(name), "decisionSize must be an integer from 1 to %d (instances per decision request), not %s", MaxEnum, jsonv.Marshal(val))
				continue
			}
			v.DecisionSize = int(n)
		case "tools", "processes", "mixins", "$schema", "description", "title":
		default:
			errs.Add(file, jsonv.PointerTo(name), "unknown key %q (want name, system, tools, processes, mixins, followUps, decisionSize)", name)
		}
	}
	v.Name = doc.Lookup("name").Str()
	v.System = doc.Lookup("system").Str()
	v.Tools = parseURIs(file, doc, "tools", &errs)
	v.Processes = parseURIs(file, doc, "processes", &errs)
	v.Mixins = parseURIs(file, doc, "mixins", &errs)
	if v.Name == "" {
		errs.Add(file, "", "a Vessel needs a name")
	} else if err := schema.CheckName(v.Name); err != nil {
		// A name shown in lists, logs and terminals must read as written.
		errs.Add(file, jsonv.PointerTo("name"), "name %+q %v", v.Name, err)
	}
	if len(v.Tools) == 0 && len(v.Processes) == 0 {
		errs.Add(file, "", "a Vessel needs tools or processes: it has nothing to call")
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *Vessel) String() string { return fmt.Sprintf("vessel %s", v.Name) }

// parseURIs reads the registry URIs of an array member of doc.
func parseURIs(file string, doc jsonv.Value, name string, errs *schema.ErrorList) []string {
	val, ok := doc.Get(name)
	if !ok {
		return nil
	}
	if val.Kind() != jsonv.KindArray {
		errs.Add(file, jsonv.PointerTo(name), "%s must be an array of registry URIs", name)
		return nil
	}
	var out []string
	for i, e := range val.Array() {
		at := jsonv.PointerTo(name).AppendIndex(i)
		switch {
		case e.Kind() != jsonv.KindString:
			errs.Add(file, at, "%s must hold registry URIs, not %s", name, e.Kind())
		case !registry.IsURI(e.Str()):
			errs.Add(file, at, "%q is not a registry URI (aug:…)", e.Str())
		case slices.Contains(out, e.Str()):
			errs.Add(file, at, "%s lists %q twice", name, e.Str())
		default:
			out = append(out, e.Str())
		}
	}
	return out
}
