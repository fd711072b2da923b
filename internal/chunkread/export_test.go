package chunkread

// UseText makes r read chunks in the text protocol, to compare the two.
func (r *Reader) UseText() { r.text = true }
