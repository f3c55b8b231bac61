package jsonv

import "iter"

// indexThreshold is the member count from which an Object keeps a name
// index. Schemas mostly have a handful of keywords, where a linear scan beats
// a map; a batch of 32 items × 4 steps has 128 properties, where it does not.
const indexThreshold = 16

// Object is a JSON object whose members keep their order. The zero Object is
// empty and ready to use. Names are unique: Set replaces a member in place.
type Object struct {
	members []Member
	index   map[string]int // name → position in members; nil below indexThreshold or when stale
}

// NewObject returns an empty object with room for n members.
func NewObject(n int) *Object {
	return &Object{members: make([]Member, 0, n)}
}

// Value returns o as a Value that shares o.
func (o *Object) Value() Value { return Value{kind: KindObject, obj: o} }

// Len returns the number of members.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.members)
}

// Members returns the members in order. The slice is o's own: do not modify
// it; use Set, Delete and Insert.
func (o *Object) Members() []Member {
	if o == nil {
		return nil
	}
	return o.members
}

// Names returns the member names in order.
func (o *Object) Names() []string {
	names := make([]string, o.Len())
	for i, m := range o.Members() {
		names[i] = m.Name
	}
	return names
}

// All iterates over the members in order.
func (o *Object) All() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		for _, m := range o.Members() {
			if !yield(m.Name, m.Value) {
				return
			}
		}
	}
}

// Index returns the position of the member name, or -1.
func (o *Object) Index(name string) int {
	if o == nil {
		return -1
	}
	if len(o.members) < indexThreshold {
		for i := range o.members {
			if o.members[i].Name == name {
				return i
			}
		}
		return -1
	}
	if o.index == nil {
		o.index = make(map[string]int, len(o.members))
		for i, m := range o.members {
			o.index[m.Name] = i
		}
	}
	if i, ok := o.index[name]; ok {
		return i
	}
	return -1
}

// Get returns the member name; ok is false when there is none.
func (o *Object) Get(name string) (v Value, ok bool) {
	if i := o.Index(name); i >= 0 {
		return o.members[i].Value, true
	}
	return Value{}, false
}

// Has reports whether o has a member name.
func (o *Object) Has(name string) bool { return o.Index(name) >= 0 }

// Set gives the member name the value v: in place when it exists, else as a
// new last member.
func (o *Object) Set(name string, v Value) {
	if i := o.Index(name); i >= 0 {
		o.members[i].Value = v
		return
	}
	o.members = append(o.members, Member{Name: name, Value: v})
	if o.index != nil {
		o.index[name] = len(o.members) - 1
	}
}

// Insert puts the member name at position i (0 ≤ i ≤ Len), moving later
// members along. An existing member of that name is removed first.
func (o *Object) Insert(i int, name string, v Value) {
	if j := o.Index(name); j >= 0 {
		o.deleteAt(j)
		if j < i {
			i--
		}
	}
	o.members = append(o.members, Member{})
	copy(o.members[i+1:], o.members[i:])
	o.members[i] = Member{Name: name, Value: v}
	o.index = nil
}

// Delete removes the member name and reports whether it was there.
func (o *Object) Delete(name string) bool {
	i := o.Index(name)
	if i < 0 {
		return false
	}
	o.deleteAt(i)
	return true
}

func (o *Object) deleteAt(i int) {
	o.members = append(o.members[:i], o.members[i+1:]...)
	o.index = nil
}

// Clone returns a deep copy of o.
func (o *Object) Clone() *Object {
	c := NewObject(o.Len())
	for _, m := range o.Members() {
		c.members = append(c.members, Member{Name: m.Name, Value: m.Value.Clone()})
	}
	return c
}
