// Package corpus is go-ycsb's core workload with values cut from a text
// corpus, so that what the databases store (and compress) is real text of
// the size YCSB asks for rather than random bytes.
//
// The corpus is one file of UTF-8 text, mapped read-only. Fields are cut
// in order: each new value takes the next bytes after the previous cut
// (one atomic cursor shared by all client threads), so a load of less
// data than the corpus never stores the same text twice. When the cursor
// passes the end it starts again at the beginning. A cut never splits a
// UTF-8 character: its start moves forward and its end back to character
// boundaries, so a value may be up to three bytes shorter than asked.
package corpus

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
)

// corpusFile names the property with the corpus's path.
const corpusFile = "corpus.file"

type corpusText struct {
	data   []byte
	cursor atomic.Uint64
}

func openCorpus(path string) (*corpusText, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", path, err)
	}
	if st.Size() < 1<<20 {
		return nil, fmt.Errorf("corpus %s: %d bytes; at least 1 MiB of text is needed", path, st.Size())
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: mmap: %w", path, err)
	}
	return &corpusText{data: data}, nil
}

func isContinuation(b byte) bool { return b&0xC0 == 0x80 }

// cut fills buf with the next len(buf) bytes of the corpus (fewer when a
// character boundary needs it) and returns the filled part.
func (t *corpusText) cut(buf []byte) []byte {
	n := uint64(len(buf))
	size := uint64(len(t.data))
	if n == 0 || n >= size {
		return buf[:0]
	}
	start := (t.cursor.Add(n) - n) % (size - n)
	end := start + n
	for start < end && isContinuation(t.data[start]) {
		start++
	}
	if end < size {
		for end > start && isContinuation(t.data[end]) {
			end--
		}
	}
	return buf[:copy(buf, t.data[start:end])]
}
