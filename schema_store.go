package binlogstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// FileSchemaStore keeps a schema history in one append-only file: a header
// line, then one line per record, each with its own checksum, written and
// fsynced before Append returns. A torn last line (a crash while writing
// it) was never acknowledged and is dropped on Load; a bad line before the
// last one is corruption and refused.
type FileSchemaStore struct {
	path string

	mu sync.Mutex
	f  *os.File
}

const schemaFileHeader = "binlogstream schema history v1\n"

// NewFileSchemaStore returns a store writing path (created 0600, with its
// directory, on the first Load or Append).
func NewFileSchemaStore(path string) *FileSchemaStore { return &FileSchemaStore{path: path} }

// Path returns the file the store writes.
func (s *FileSchemaStore) Path() string { return s.path }

// Load reads every record. A missing file is an empty history. The
// store's first Load or Append locks the file (flock, where there is one)
// until Close: a second store on it, in this process or another, is
// refused, since two writers would interleave their records.
func (s *FileSchemaStore) Load() ([]SchemaRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.NewSectionReader(s.f, 0, 1<<62))
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, nil
	}
	if !bytes.HasPrefix(data, []byte(schemaFileHeader)) {
		if len(data) < len(schemaFileHeader) && bytes.HasPrefix([]byte(schemaFileHeader), data) {
			return nil, s.truncate(0) // a torn header: nothing was ever appended
		}
		return nil, fmt.Errorf("%s is not a binlogstream schema history (unknown header)", s.path)
	}
	var recs []SchemaRecord
	off := len(schemaFileHeader)
	for line := 1; off < len(data); line++ {
		nl := bytes.IndexByte(data[off:], '\n')
		last := nl < 0 || off+nl+1 == len(data)
		var body []byte
		if nl < 0 {
			body = data[off:]
		} else {
			body = data[off : off+nl]
		}
		rec, err := decodeSchemaLine(body)
		if err != nil || nl < 0 {
			if last {
				return recs, s.truncate(int64(off)) // torn tail: never acknowledged
			}
			return nil, fmt.Errorf("%s: record %d (byte %d) is corrupt: %v", s.path, line, off, err)
		}
		recs = append(recs, rec)
		off += nl + 1
	}
	return recs, nil
}

func (s *FileSchemaStore) truncate(size int64) error {
	if err := s.f.Truncate(size); err != nil {
		return fmt.Errorf("drop the torn end of %s: %w", s.path, err)
	}
	return nil
}

// Append writes rec and fsyncs the file.
func (s *FileSchemaStore) Append(rec SchemaRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(); err != nil {
		return err
	}
	line, err := encodeSchemaLine(rec)
	if err != nil {
		return err
	}
	st, err := s.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		line = append([]byte(schemaFileHeader), line...)
	}
	if _, err := s.f.Write(line); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", s.path, err)
	}
	if st.Size() == 0 { // make the new file's name durable
		if d, err := os.Open(filepath.Dir(s.path)); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return nil
}

// open opens and locks the file once.
func (s *FileSchemaStore) open() error {
	if s.f != nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return fmt.Errorf("schema history %s is in use by another store (one writer per file): %w", s.path, err)
	}
	s.f = f
	return nil
}

// Close releases the file.
func (s *FileSchemaStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// A line is "CRC32HEX JSON": the checksum covers the JSON.
func encodeSchemaLine(rec SchemaRecord) ([]byte, error) {
	js, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(js)+10)
	b = append(b, fmt.Sprintf("%08x ", crc32.ChecksumIEEE(js))...)
	b = append(b, js...)
	return append(b, '\n'), nil
}

func decodeSchemaLine(line []byte) (SchemaRecord, error) {
	var rec SchemaRecord
	if len(line) < 10 || line[8] != ' ' {
		return rec, errors.New("no checksum")
	}
	want, err := strconv.ParseUint(string(line[:8]), 16, 32)
	if err != nil {
		return rec, errors.New("bad checksum field")
	}
	js := line[9:]
	if crc32.ChecksumIEEE(js) != uint32(want) {
		return rec, errors.New("checksum mismatch")
	}
	if err := json.NewDecoder(bufio.NewReader(bytes.NewReader(js))).Decode(&rec); err != nil {
		return rec, err
	}
	if rec.Snapshot == nil && rec.Prescan == nil && rec.Statement == "" {
		return rec, errors.New("record holds no snapshot, prescan or statement")
	}
	return rec, nil
}
