// Package ifacebox makes interface values that point into memory the
// caller owns (a slab of values), so that boxing a decoded value costs no
// allocation of its own.
package ifacebox

import "unsafe"

// eface is the layout of an empty interface: its type and a pointer to
// its value (for the non-pointer types boxed here).
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// At returns an interface of typed's dynamic type (T) whose value is *p:
// the boxing Go does for any(*p), without an allocation. *p must never
// be written again.
func At[T any](typed any, p *T) any {
	x := typed
	(*eface)(unsafe.Pointer(&x)).data = unsafe.Pointer(p)
	return x
}
