package fsstore

// Search: an SQLite FTS5 index of the text parts an Annotator was given,
// one row per line, ranked by BM25.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/searchq"
)

// DefaultSearchLimit is how many hits Search returns when limit < 1.
const DefaultSearchLimit = 10

// DefaultSearchCandidates is how many matching lines Search ranks at most
// (Config.SearchCandidates): the newest, in scope.
const DefaultSearchCandidates = 5000

// searchSnippetTokens is how many tokens a hit's snippet holds at most
// (FTS5 allows 64): a line of an accessibility snapshot or a log fits.
const searchSnippetTokens = 32

// searchSchema is the search index, made (IF NOT EXISTS) when the index
// is opened for writing, so an index of an earlier mcpx gains it without a
// schema version: search_parts holds one row per non-blank line of a text
// part (the artifact's seq, the place, the line); search_fts is an
// external-content FTS5 index over it, kept in step by triggers. Deleting
// an artifact (Delete, Collect, DropScope, recovery) deletes its rows
// through the artifacts trigger, whatever path deletes it.
// search_pending holds the text parts annotated but not yet in
// search_parts (see indexer.go), deleted by the transaction that writes
// an artifact's last rows, or with the artifact.
var searchSchema = []string{
	`CREATE TABLE IF NOT EXISTS search_parts (
		id    INTEGER PRIMARY KEY,
		seq   INTEGER NOT NULL,
		place TEXT    NOT NULL,
		text  TEXT    NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS search_parts_seq ON search_parts (seq)`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5 (text, content='search_parts', content_rowid='id')`,
	`CREATE TRIGGER IF NOT EXISTS search_parts_insert AFTER INSERT ON search_parts BEGIN
		INSERT INTO search_fts (rowid, text) VALUES (new.id, new.text);
	END`,
	`CREATE TRIGGER IF NOT EXISTS search_parts_delete AFTER DELETE ON search_parts BEGIN
		INSERT INTO search_fts (search_fts, rowid, text) VALUES ('delete', old.id, old.text);
	END`,
	`CREATE TRIGGER IF NOT EXISTS artifacts_delete_search AFTER DELETE ON artifacts BEGIN
		DELETE FROM search_parts WHERE seq = old.seq;
	END`,
	`CREATE TABLE IF NOT EXISTS search_pending (
		id    INTEGER PRIMARY KEY,
		seq   INTEGER NOT NULL,
		parts BLOB    NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS search_pending_seq ON search_pending (seq)`,
	`CREATE TRIGGER IF NOT EXISTS artifacts_delete_pending AFTER DELETE ON artifacts BEGIN
		DELETE FROM search_pending WHERE seq = old.seq;
	END`,
}

// indexParts replaces the search rows of artifact seq with parts, one
// row per line that holds a word, and removes its pending text, which
// parts are. The caller holds the index's write lock and commits tx.
func indexParts(ctx context.Context, tx *sql.Tx, seq int64, parts []store.TextPart) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM search_parts WHERE seq = ?`, seq); err != nil {
		return err
	}
	if _, err := insertSearchRows(ctx, tx, seq, searchRows(parts), nil); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM search_pending WHERE seq = ?`, seq)
	return err
}

// searchRow is one line of text as the search index holds it.
type searchRow struct{ place, line string }

// searchRows returns the rows of parts (see store.EachLine).
func searchRows(parts []store.TextPart) []searchRow {
	var rows []searchRow
	for _, p := range parts {
		store.EachLine(p, func(place, line string) bool {
			rows = append(rows, searchRow{place, line})
			return true
		})
	}
	return rows
}

// insertSearchRows adds rows to the search index of artifact seq, in
// statements of indexRowsPerInsert rows. Before each statement after the
// first it asks yield, when not nil, and stops when it says so; it
// returns how many rows it added.
func insertSearchRows(ctx context.Context, tx *sql.Tx, seq int64, rows []searchRow, yield func() bool) (int, error) {
	// Many rows per INSERT: each statement opens a savepoint (the insert
	// trigger needs a statement journal) at which FTS5 flushes its
	// pending terms, so a row per statement cost ~250 µs: 5 s for the
	// 20,000 lines of a 1 MB JSON result.
	var full *sql.Stmt
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	args := make([]any, 0, 3*indexRowsPerInsert)
	done := 0
	for done < len(rows) {
		if done > 0 && yield != nil && yield() {
			break
		}
		batch := rows[done:min(done+indexRowsPerInsert, len(rows))]
		args = args[:0]
		for _, r := range batch {
			args = append(args, seq, r.place, r.line)
		}
		var err error
		if len(batch) == indexRowsPerInsert {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, insertPartsSQL(len(batch))); err != nil {
					return done, err
				}
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, insertPartsSQL(len(batch)), args...)
		}
		if err != nil {
			return done, err
		}
		done += len(batch)
	}
	return done, nil
}

// indexRowsPerInsert is how many search rows one INSERT adds (3 bound
// parameters each, well under SQLite's 32,766).
const indexRowsPerInsert = 256

// insertPartsSQL is an INSERT of n search rows.
func insertPartsSQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO search_parts (seq, place, text) VALUES (?, ?, ?)`)
	for range n - 1 {
		b.WriteString(`,(?, ?, ?)`)
	}
	return b.String()
}

// searcher ranks the lines of the search index, once the indexer has
// written what is queued.
type searcher struct {
	candidates int // Config.SearchCandidates, default applied
	idx        *index
	text       *indexer
}

// search returns the best limit hits of query among the artifacts put
// under a scope that scope contains, ranked by FTS5's bm25().
func (x *searcher) search(ctx context.Context, scope store.Scope, query string, limit int) ([]store.Hit, error) {
	// A query with nothing to search for is answered before waiting for
	// the indexer.
	terms := searchq.Parse(query)
	if len(terms) == 0 {
		return nil, fmt.Errorf("fsstore: search: %w", store.ErrBadQuery)
	}
	if err := x.text.wait(ctx); err != nil {
		return nil, fmt.Errorf("fsstore: search: %w", err)
	}
	if err := x.text.indexPending(ctx, scope); err != nil {
		return nil, fmt.Errorf("fsstore: search: %w", err)
	}
	hits, err := x.rank(ctx, scope, terms, limit)
	if err != nil {
		return nil, fmt.Errorf("fsstore: search: %w", err)
	}
	return hits, nil
}

func (x *searcher) rank(ctx context.Context, scope store.Scope, terms []searchq.Term, limit int) ([]store.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit < 1 {
		limit = DefaultSearchLimit
	}
	db, err := x.idx.db(ctx)
	if err != nil || db == nil {
		return nil, err
	}
	cond, args := scopeFilter(scope)
	match := searchq.FTS5(terms)
	// First the best of the newest candidates in scope, by rank alone:
	// bm25(), snippet() and the joins a ref needs cost per row, and a
	// common word matches most lines (rowid order costs nothing in FTS5).
	// Among equal ranks the newest artifact comes first: the same line in
	// a page's snapshots of the last hour ranks the same in each, and the
	// current page is the one whose refs still exist.
	top, err := db.QueryContext(ctx, `SELECT id, r FROM (
			SELECT f.rowid AS id, p.seq AS seq, bm25(search_fts) AS r FROM search_fts f JOIN search_parts p ON p.id = f.rowid
			WHERE search_fts MATCH ? AND EXISTS (SELECT 1 FROM scopes s WHERE s.seq = p.seq`+cond+`)
			ORDER BY f.rowid DESC LIMIT ?)
		ORDER BY r, seq DESC, id LIMIT ?`, append(append([]any{match}, args...), x.candidates, limit)...)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, nil // a read-only index an earlier mcpx made: nothing indexed
		}
		return nil, x.idx.queryErr(err)
	}
	var rowids []int64
	var ranks []float64
	for top.Next() {
		var id int64
		var rank float64
		if err := top.Scan(&id, &rank); err != nil {
			top.Close()
			return nil, x.idx.queryErr(err)
		}
		rowids, ranks = append(rowids, id), append(ranks, rank)
	}
	top.Close()
	if err := top.Err(); err != nil {
		return nil, x.idx.queryErr(err)
	}
	// Then each hit's ref (with the first of its scopes that scope
	// contains, as List gives) and snippet.
	q := `SELECT ` + x.idx.refColumns() + `, ` + scopeColumns + `, p.place,
			snippet(search_fts, 0, '', '', '…', ` + strconv.Itoa(searchSnippetTokens) + `)
		FROM search_fts
		JOIN search_parts p ON p.id = search_fts.rowid
		JOIN artifacts a ON a.seq = p.seq
		JOIN scopes s ON s.seq = p.seq AND s.ord = (SELECT MIN(s.ord) FROM scopes s WHERE s.seq = p.seq` + cond + `)
		WHERE search_fts MATCH ? AND search_fts.rowid = ?`
	hits := make([]store.Hit, 0, len(rowids))
	for i, id := range rowids {
		h := store.Hit{Score: -ranks[i]}
		_, h.Ref, err = scanRef(db.QueryRowContext(ctx, q, append(append(append([]any{}, args...), match), id)...), &h.Place, &h.Snippet)
		if errors.Is(err, sql.ErrNoRows) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, x.idx.queryErr(err)
		}
		hits = append(hits, h)
	}
	return hits, nil
}
