package mediate

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawdapus/clawgo/internal/jsonl"
)

// The continuity store's directory holds one append-only log of records,
// continuity.log, beside continuity.lock (held while a store has the
// directory open):
//
//	file   = magic record*
//	magic  = "CLCONT1\n"
//	record = len:u32le crc:u32le payload[len]     (crc: CRC-32C of payload)
//	payload = kind:u8 stored:i64le keylen:u16le key (msglen:u32le msg)*
//
// kind 1 is an entry (its messages follow), kind 2 an ambiguity mark (no
// messages). A later record for a key replaces an earlier one; stored is
// when it was written (Unix nanoseconds), the entry's last use at start-up.
// Appending a record is one write(2), made under the store's lock at the
// end of the log, so a crash leaves at most one torn record, at the end,
// which the next open cuts off. A record that must not come back (an entry
// dropped for an oversized successor) has its kind byte cleared, so its
// checksum no longer holds and replay skips it. Dead records (replaced,
// evicted, cleared) are reclaimed by compaction: the live records are
// copied to a new file that is renamed over the log.
const (
	logName      = "continuity.log"
	lockName     = "continuity.lock"
	logMagic     = "CLCONT1\n"
	logHeaderLen = int64(len(logMagic))
	recHeaderLen = 8
	recFixedLen  = 1 + 8 + 2 // kind, stored, key length
	kindEntry    = 1
	kindMark     = 2
	maxKeyLen    = 1<<16 - 1
	maxRecordLen = 1 << 30 // a length beyond this is not a record
	compactRetry = time.Minute
	replayChunk  = 64 << 10
	maxPooledBuf = 1 << 20
	logFileMode  = 0o600
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errRecord is a record that does not decode.
var errRecord = errors.New("continuity record does not decode")

// ErrStoreClosed is returned by Put on a closed store.
var ErrStoreClosed = errors.New("continuity store closed")

// appendRecord appends the record of key to dst.
func appendRecord(dst []byte, kind byte, stored int64, key string, messages []json.RawMessage) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0, kind)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(stored))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(key)))
	dst = append(dst, key...)
	for _, m := range messages {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(m)))
		dst = append(dst, m...)
	}
	sealRecord(dst[start:])
	return dst
}

// recordLen is the length of the record appendRecord writes.
func recordLen(key string, messages []json.RawMessage) int64 {
	n := int64(recHeaderLen + recFixedLen + len(key))
	for _, m := range messages {
		n += 4 + int64(len(m))
	}
	return n
}

// sealRecord writes the length and checksum of the record rec.
func sealRecord(rec []byte) {
	payload := rec[recHeaderLen:]
	binary.LittleEndian.PutUint32(rec, uint32(len(payload)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(payload, castagnoli))
}

// record is a decoded record; key and messages share the decoded bytes.
type record struct {
	kind     byte
	stored   int64
	key      string
	messages []json.RawMessage
}

// decodeRecord decodes one whole record (header and payload).
func decodeRecord(b []byte) (record, error) {
	if len(b) < recHeaderLen {
		return record{}, errRecord
	}
	n := binary.LittleEndian.Uint32(b)
	payload := b[recHeaderLen:]
	if uint64(n) != uint64(len(payload)) || binary.LittleEndian.Uint32(b[4:]) != crc32.Checksum(payload, castagnoli) {
		return record{}, errRecord
	}
	return decodePayload(payload)
}

// decodePayload decodes a record's payload: its kind, time, key and
// messages, every length checked against what is there.
func decodePayload(p []byte) (record, error) {
	r, rest, err := decodeHead(p)
	if err != nil {
		return record{}, err
	}
	if r.kind == kindMark {
		if len(rest) != 0 {
			return record{}, errRecord
		}
		return r, nil
	}
	for len(rest) > 0 {
		if len(rest) < 4 {
			return record{}, errRecord
		}
		n := binary.LittleEndian.Uint32(rest)
		if uint64(n) > uint64(len(rest)-4) {
			return record{}, errRecord
		}
		r.messages = append(r.messages, json.RawMessage(rest[4:4+n:4+n]))
		rest = rest[4+n:]
	}
	if len(r.messages) == 0 {
		return record{}, errRecord
	}
	return r, nil
}

// decodeHead decodes a payload's kind, time and key, and returns the rest.
func decodeHead(p []byte) (record, []byte, error) {
	if len(p) < recFixedLen {
		return record{}, nil, errRecord
	}
	r := record{kind: p[0], stored: int64(binary.LittleEndian.Uint64(p[1:]))}
	if r.kind != kindEntry && r.kind != kindMark {
		return record{}, nil, errRecord
	}
	kl := int(binary.LittleEndian.Uint16(p[9:]))
	if kl == 0 || kl > len(p)-recFixedLen {
		return record{}, nil, errRecord
	}
	r.key = string(p[recFixedLen : recFixedLen+kl])
	return r, p[recFixedLen+kl:], nil
}

// logFile is the open log, shared by the readers using it: the store holds
// one reference, each read in progress another, and the last one out
// closes it (compaction replaces the store's file while reads of the old
// one may still run).
type logFile struct {
	f    *os.File
	refs atomic.Int32
}

func newLogFile(f *os.File) *logFile {
	l := &logFile{f: f}
	l.refs.Store(1)
	return l
}

func (l *logFile) acquire() *logFile { l.refs.Add(1); return l }

func (l *logFile) release() {
	if l.refs.Add(-1) == 0 {
		_ = l.f.Close()
	}
}

// recPool recycles the buffers records are encoded into.
var recPool = sync.Pool{New: func() any { return new([]byte) }}

// openLog takes the directory's lock, removes temporary files left by an
// interrupted compaction (or by the one-file-per-entry layout of earlier
// versions), replays the log into the index and brings in entries of that
// earlier layout. Called by OpenStore before the store is shared.
func (s *Store) openLog() error {
	unlock, err := lockDir(filepath.Join(s.dir, lockName))
	if err != nil {
		return err
	}
	s.unlock = unlock
	f, err := os.OpenFile(filepath.Join(s.dir, logName), os.O_RDWR|os.O_CREATE, logFileMode)
	if err != nil {
		unlock()
		return err
	}
	s.file = newLogFile(f)
	cut, err := s.replay()
	if err != nil {
		s.file.release()
		unlock()
		return err
	}
	if cut.Bytes > 0 && s.onRepair != nil {
		s.onRepair(cut)
	}
	if err := s.migrateFiles(); err != nil {
		s.file.release()
		unlock()
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evictLocked()
	if s.deadLocked() > 0 && s.deadLocked() > s.maxBytes/2 {
		// A log mostly dead at start (a smaller bound than before, or a
		// crash before a compaction) is compacted before use. One that
		// fails (a full disk) leaves the log as it was, still whole: the
		// store opens and tries again later.
		s.compacting = true
		s.mu.Unlock()
		err := s.compact()
		s.mu.Lock()
		if err != nil {
			s.compactAfter = s.now().Add(compactRetry)
		}
	}
	return nil
}

// replay reads the log into the index: records in order, a later one for
// a key replacing an earlier one, each checked against its checksum. The
// first record that cannot be one (a length past the end: a write a crash
// cut short) ends the log, which is truncated there; it returns what it
// cut. It holds one chunk of the log in memory at a time, never the
// messages.
func (s *Store) replay() (jsonl.Cut, error) {
	f := s.file.f
	cut := jsonl.Cut{Path: f.Name()}
	fi, err := f.Stat()
	if err != nil {
		return cut, err
	}
	end := fi.Size()
	if end < logHeaderLen {
		// New (or cut short before its header was whole).
		if err := f.Truncate(0); err != nil {
			return cut, err
		}
		if _, err := f.WriteAt([]byte(logMagic), 0); err != nil {
			return cut, err
		}
		s.size, cut.Bytes = logHeaderLen, end
		return cut, nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, end), replayChunk)
	magic := make([]byte, logHeaderLen)
	if _, err := io.ReadFull(r, magic); err != nil {
		return cut, err
	}
	if string(magic) != logMagic {
		return cut, fmt.Errorf("%s is not a continuity log (remove it to start afresh)", filepath.Join(s.dir, logName))
	}
	head := make([]byte, recHeaderLen+recFixedLen+maxKeyLen)
	chunk := make([]byte, replayChunk)
	off := logHeaderLen
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for off+recHeaderLen <= end {
		if _, err := io.ReadFull(r, head[:recHeaderLen]); err != nil {
			return cut, err
		}
		n := int64(binary.LittleEndian.Uint32(head))
		if n < recFixedLen+1 || n > maxRecordLen || off+recHeaderLen+n > end {
			break
		}
		// The head (kind, time, key) is read whole, the rest streamed
		// through the checksum.
		hn := min(n, int64(recFixedLen+maxKeyLen))
		if _, err := io.ReadFull(r, head[recHeaderLen:recHeaderLen+hn]); err != nil {
			return cut, err
		}
		crc := crc32.Update(0, castagnoli, head[recHeaderLen:recHeaderLen+hn])
		for left := n - hn; left > 0; {
			c := chunk[:min(left, int64(len(chunk)))]
			if _, err := io.ReadFull(r, c); err != nil {
				return cut, err
			}
			crc = crc32.Update(crc, castagnoli, c)
			left -= int64(len(c))
		}
		size := recHeaderLen + n
		if crc == binary.LittleEndian.Uint32(head[4:]) {
			if rec, rest, err := decodeHead(head[recHeaderLen : recHeaderLen+hn]); err == nil && (rec.kind == kindEntry) == (len(rest) > 0 || n > hn) {
				s.applyLocked(rec, off, size, now)
			}
		}
		off += size
	}
	if off < end {
		if err := f.Truncate(off); err != nil {
			return cut, err
		}
		cut.Offset, cut.Bytes = off, end-off
	}
	s.size = off
	return cut, nil
}

// applyLocked indexes a replayed record at off.
func (s *Store) applyLocked(rec record, off, size int64, now time.Time) {
	used := time.Unix(0, rec.stored)
	el, exists := s.entries[rec.key]
	if now.Sub(used) > s.maxAge || size > s.maxEntryBytes {
		// Expired, or over today's bound: the key has no entry.
		if exists {
			s.removeLocked(el)
		}
		return
	}
	// The record is the key's latest: a mark of it remembered from an
	// earlier record is replaced (by an entry, as Put replaces, or by
	// this live mark).
	s.forgetRetiredMarkLocked(rec.key)
	if !exists {
		el = s.lru.PushFront(&storeEntry{key: rec.key})
		s.entries[rec.key] = el
	}
	e := el.Value.(*storeEntry)
	s.bytes += size - e.size
	e.off, e.size, e.used, e.ambiguous = off, size, used, rec.kind == kindMark
	s.lru.MoveToFront(el)
	s.evictLocked()
}

// appendLocked writes rec at the end of the log and returns its offset. A
// write that fails is cut off again, so the log ends with whole records.
func (s *Store) appendLocked(rec []byte) (int64, error) {
	if s.file == nil {
		return 0, ErrStoreClosed
	}
	if s.torn {
		if err := s.file.f.Truncate(s.size); err != nil {
			return 0, err
		}
		s.torn = false
	}
	off := s.size
	if _, err := s.file.f.WriteAt(rec, off); err != nil {
		if terr := s.file.f.Truncate(off); terr != nil {
			s.torn = true
		}
		return 0, err
	}
	s.size += int64(len(rec))
	return off, nil
}

// invalidateLocked clears the kind byte of e's record, so that it does not
// come back at the next start (replay skips a record whose checksum fails).
func (s *Store) invalidateLocked(e *storeEntry) error {
	if s.file == nil || e.size == 0 {
		return nil
	}
	if s.compacting && e.off < s.compactEnd {
		s.compactDropped = append(s.compactDropped, e.off)
	}
	_, err := s.file.f.WriteAt([]byte{0}, e.off+recHeaderLen)
	return err
}

// deadLocked is the bytes of the log no entry or remembered mark uses.
func (s *Store) deadLocked() int64 {
	return s.size - logHeaderLen - s.bytes - s.markBytes
}

// maybeCompactLocked starts a compaction in the background when more than
// half the byte bound of the log is dead, so the log stays within 1.5
// times the bound (plus what is written while one runs).
func (s *Store) maybeCompactLocked() {
	if s.file == nil || s.compacting || s.closed || s.deadLocked() <= s.maxBytes/2 || s.now().Before(s.compactAfter) {
		return
	}
	s.compacting = true
	s.compactions.Add(1)
	go func() {
		defer s.compactions.Done()
		if err := s.compact(); err != nil {
			s.mu.Lock()
			s.compactAfter = s.now().Add(compactRetry)
			s.mu.Unlock()
		}
	}()
}

// liveRecord is an entry or a remembered mark as compaction copies it.
type liveRecord struct {
	key  string
	off  int64 // -1: a remembered mark, written anew
	size int64
	used time.Time
}

// compact writes the live records to a new log and renames it over the
// old one. Appends go on meanwhile: the records written after the snapshot
// are copied over at the end, under the lock, and entries dropped since
// the snapshot are cleared in the new file. s.compacting is set by the
// caller; compact clears it.
func (s *Store) compact() (err error) {
	s.mu.Lock()
	var live []liveRecord
	for el := s.markOrder.Front(); el != nil; el = el.Next() {
		m := el.Value.(*markEntry)
		live = append(live, liveRecord{key: m.key, off: -1, used: m.used})
	}
	for el := s.lru.Back(); el != nil; el = el.Prev() { // oldest first
		e := el.Value.(*storeEntry)
		live = append(live, liveRecord{key: e.key, off: e.off, size: e.size, used: e.used})
	}
	old := s.file.acquire()
	end := s.size
	s.compactEnd = end
	s.compactDropped = nil
	s.mu.Unlock()
	var tmp *os.File
	defer func() {
		old.release()
		if err != nil && tmp != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
		s.mu.Lock()
		s.compacting, s.compactDropped = false, nil
		if err == nil {
			s.maybeCompactLocked() // what was written meanwhile may call for another
		}
		s.mu.Unlock()
	}()
	if tmp, err = os.CreateTemp(s.dir, tempPrefix+"*"); err != nil {
		return err
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	moved := make(map[int64]int64, len(live))
	pos := logHeaderLen
	_, _ = w.WriteString(logMagic)
	var buf []byte
	for _, r := range live {
		if r.off < 0 {
			buf = appendRecord(buf[:0], kindMark, r.used.UnixNano(), r.key, nil)
		} else {
			if int64(cap(buf)) < r.size {
				buf = make([]byte, r.size)
			}
			buf = buf[:r.size]
			if _, err := old.f.ReadAt(buf, r.off); err != nil {
				continue // no longer readable: dropped, as a Get would
			}
			if _, err := decodeRecord(buf); err != nil {
				continue
			}
			// The entry's last use becomes its time: the next start
			// orders and ages entries by it.
			binary.LittleEndian.PutUint64(buf[recHeaderLen+1:], uint64(r.used.UnixNano()))
			sealRecord(buf)
			moved[r.off] = pos
		}
		if _, err = w.Write(buf); err != nil {
			return err
		}
		pos += int64(len(buf))
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The tail written since the snapshot, as it is.
	if _, err = io.Copy(io.NewOffsetWriter(tmp, pos), io.NewSectionReader(old.f, end, s.size-end)); err != nil {
		return err
	}
	for _, off := range s.compactDropped {
		if to, ok := moved[off]; ok {
			if _, err = tmp.WriteAt([]byte{0}, to+recHeaderLen); err != nil {
				return err
			}
		}
	}
	if err = os.Rename(tmp.Name(), filepath.Join(s.dir, logName)); err != nil {
		return err
	}
	for el := s.lru.Front(); el != nil; {
		e, next := el.Value.(*storeEntry), el.Next()
		if e.off >= end {
			e.off += pos - end
		} else if to, ok := moved[e.off]; ok {
			e.off = to
		} else {
			s.removeLocked(el) // its record did not read back whole
		}
		el = next
	}
	s.file.release()
	s.file = newLogFile(tmp)
	s.size = pos + (s.size - end)
	s.torn = false
	return nil
}

// Close waits for a compaction in progress and releases the log and the
// directory's lock; a store without a directory has nothing to release.
// Get finds nothing and Put fails once the store is closed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed || s.dir == "" {
		s.closed = true
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.compactions.Wait()
	s.mu.Lock()
	f := s.file
	s.file = nil
	s.mu.Unlock()
	if f != nil {
		f.release()
	}
	s.unlock()
	return nil
}

// migrateFiles brings entries of the earlier layout (one <key>.json file
// per entry, <key>.mark per remembered mark) into the log, then removes
// them, and removes temporary files of interrupted writes.
func (s *Store) migrateFiles() error {
	des, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	type legacy struct {
		key  string
		path string
		mark bool
		mod  time.Time
	}
	var found []legacy
	for _, de := range des {
		name := de.Name()
		path := filepath.Join(s.dir, name)
		if strings.HasPrefix(name, tempPrefix) {
			_ = os.Remove(path)
			continue
		}
		if !de.Type().IsRegular() {
			continue
		}
		key, mark := strings.CutSuffix(name, legacyMarkSuffix)
		if !mark {
			var ok bool
			if key, ok = strings.CutSuffix(name, legacyEntrySuffix); !ok {
				continue
			}
		}
		if !isLegacyKey(key) {
			continue // not a continuity file: not the store's to touch
		}
		if info, err := de.Info(); err == nil {
			found = append(found, legacy{key: key, path: path, mark: mark, mod: info.ModTime()})
		}
	}
	// Marks first: they were evicted before any entry still on disk.
	sort.Slice(found, func(i, j int) bool {
		if found[i].mark != found[j].mark {
			return found[i].mark
		}
		return found[i].mod.Before(found[j].mod)
	})
	for _, l := range found {
		kind, stored, messages := byte(kindMark), l.mod, []json.RawMessage(nil)
		if !l.mark {
			var f struct {
				Stored    time.Time         `json:"stored"`
				Messages  []json.RawMessage `json:"messages"`
				Ambiguous bool              `json:"ambiguous"`
			}
			b, err := os.ReadFile(l.path)
			if err != nil || json.Unmarshal(b, &f) != nil || (!f.Ambiguous && len(f.Messages) == 0) {
				_ = os.Remove(l.path) // torn: not continuity
				continue
			}
			if !f.Ambiguous {
				kind, messages = kindEntry, f.Messages
			}
		}
		rec := appendRecord(nil, kind, stored.UnixNano(), l.key, messages)
		s.mu.Lock()
		off, err := s.appendLocked(rec)
		if err == nil {
			s.applyLocked(record{kind: kind, stored: stored.UnixNano(), key: l.key}, off, int64(len(rec)), s.now())
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
		_ = os.Remove(l.path)
	}
	return nil
}

// The one-file-per-entry layout of earlier versions, migrated at open.
const (
	legacyEntrySuffix = ".json"
	legacyMarkSuffix  = ".mark"
)

// isLegacyKey reports whether name is a continuity key as the mediator
// makes them (continuityKey: 64 lowercase hex digits), the only names the
// store ever gave its files.
func isLegacyKey(name string) bool {
	if len(name) != 64 {
		return false
	}
	for i := range len(name) {
		if c := name[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
