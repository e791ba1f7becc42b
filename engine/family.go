package engine

// Family is the kind of limit a key holds. A key belongs to one family; a
// command of another family gets a wrong-type error.
type Family uint8

const (
	// FamilyNone is the family of a key that does not exist.
	FamilyNone Family = iota
	// FamilyCL is a GCRA key written by CL.THROTTLE.
	FamilyCL
	// FamilySW is a sliding-log key (SW.THROTTLE): its requests' times.
	FamilySW
	// FamilySWC is a sliding-window-counter key (SWC.THROTTLE).
	FamilySWC
	// FamilyFW is a fixed-window key (FW.THROTTLE).
	FamilyFW
	// FamilyLB is a leaky-bucket queue key (LB.THROTTLE): its tail, the
	// next free departure.
	FamilyLB

	// numFamilies sizes the per-family key counts; new families go above it.
	numFamilies
)

// Families lists the families a key can belong to, for per-family figures.
func Families() []Family {
	fs := make([]Family, 0, numFamilies-1)
	for f := FamilyNone + 1; f < numFamilies; f++ {
		fs = append(fs, f)
	}
	return fs
}

// TypeName is the name TYPE reports for a key of the family. A CL key is a
// string, as in Redis with redis-cell.
func (f Family) TypeName() string {
	switch f {
	case FamilyCL:
		return "string"
	case FamilySW:
		return "sw"
	case FamilySWC:
		return "swc"
	case FamilyFW:
		return "fw"
	case FamilyLB:
		return "lb"
	}
	return "none"
}

// Name is the family's short lower-case name ("cl"), as metrics label it.
func (f Family) Name() string {
	switch f {
	case FamilyCL:
		return "cl"
	case FamilySW, FamilySWC, FamilyFW, FamilyLB:
		return f.TypeName()
	}
	return "none"
}
