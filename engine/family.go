package engine

// Family is the kind of limit a key holds. A key belongs to one family; a
// command of another family gets a wrong-type error.
type Family uint8

const (
	// FamilyNone is the family of a key that does not exist.
	FamilyNone Family = iota
	// FamilyCL is a GCRA key written by CL.THROTTLE.
	FamilyCL
)

// TypeName is the name TYPE reports for a key of the family. A CL key is a
// string, as in Redis with redis-cell.
func (f Family) TypeName() string {
	switch f {
	case FamilyCL:
		return "string"
	}
	return "none"
}
