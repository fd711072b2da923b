package binlogstream

import "github.com/binlogstream/binlogstream/internal/rows"

// arenaStream is a Stream of this package that can decode into arenas
// (rows.Arena: SyncerConfig.RecycleRows, DirConfig.RecycleRows).
type arenaStream interface {
	// takeArena returns the arena of the rows of the event Next returned
	// last (nil when it has none), once.
	takeArena() *rows.Arena
}

func takeArena(st Stream) *rows.Arena {
	if a, ok := st.(arenaStream); ok {
		return a.takeArena()
	}
	return nil
}
