/*
 * tunables.h - every number the engine decides by, each with its reason
 * and where it was measured: a section (and row) of docs/BENCHMARKS.md,
 * or "a bound" where it only caps memory, fds or latency and no run
 * turned on its value.  The code that uses each one says how; the rules
 * per file system are policy.c's table.  Private (internal.h includes
 * it).
 */
#ifndef DE_TUNABLES_H
#define DE_TUNABLES_H

/* ---- Threads and fds (ctx.c, policy.c, sys.c) ---------------------- */

/* getdents64's buffer, one per thread: about 16k short entries a call,
 * so a huge directory is read in few calls.  A bound. */
#define DE__BUFSZ		(512u * 1024u)

/* Workers at most, one per online CPU by default: no machine this ran
 * on had more than the cap.  A bound. */
#define DE__CPUS_MAX		64

/* Workers on a network or FUSE file system, where each request waits
 * for a server: "Engine heuristics", "64 workers (2026-12-05)". */
#define DE__LAT_THREADS		64u

/* The fd budget: at most this many held, after DE__FD_RESERVE for the
 * caller's hooks.  A bound.  The pool's directories need a few per
 * thread (past that, held fds only save reopens); the global schedule's
 * window holds half of it (global.c): 2,048 directories, more than half
 * a transaction of a 64 MiB journal's directory blocks.  At 256 (128
 * directories), a tree of 4,000,000 files was swept at 0.5 files per
 * inode-table block, each write home 1.6 blocks long: 250 files a second
 * on the hdd model, where a budget of 2,048 went three times as fast
 * (bench/results/2026-12-06/NOTES.md).  DE_FD_LIMIT_WANT is twice it and
 * room for the caller's. */
#define DE__FD_BUDGET_MAX	4096
#define DE__FD_RESERVE		4

/* de_config.progress_ms's default: rsync's keep-alives and progress
 * lines want a call a second.  The API's contract (delete_engine.h). */
#define DE__PROGRESS_MS		1000

/* ---- The parallel schedule (sched.c, unlink.c, policy.c) ----------- */

/* A second unlinker joins only with this many directory tasks queued:
 * "Engine heuristics", "in a narrow tree, one unlinker, ...". */
#define DE__P2_GATE		2u

/* A reader's lead on a chain: scanned nodes (each pins an fd, so at most
 * a quarter of the fd budget) and their entries.  Measured as a whole
 * with the gate's row; the values themselves are bounds. */
#define DE__AHEAD_MAX		32u
#define DE__READY_ENTS_MAX	65536u

/* A huge directory's unlinks are split between workers (where
 * policy.c's table says it pays, tmpfs) from DE__SPLIT_MIN files, or
 * DE__SPLIT_IDLE_MIN with no task queued, in chunks of DE__CHUNK_MIN at
 * least: "Engine heuristics", "split a big directory between workers". */
#define DE__SPLIT_MIN		8192
#define DE__SPLIT_IDLE_MIN	256
#define DE__CHUNK_MIN		64u

/* Directories an ordered run scans ahead of its walk: the listings held
 * at once ("Memory").  A bound. */
#define DE__WIN_MAX		256u

/* The unordered emitter is woken per this many events or listed
 * entries: woken per event, it cost context switches per directory.
 * Bounds (its latency, and the memory of the listings it holds). */
#define DE__EV_WAKE_EVENTS	64u
#define DE__EV_WAKE_ENTS	16384u

/* The calling thread, removing, delivers progress every this many of
 * its removals (a power of two): keep-alives within a second at any
 * pace, the clock read once per batch.  A bound. */
#define DE__TICK_REMOVALS	64u

/* The serial walk hands its pin down the path only with at least this
 * many fds in the budget (test/fd_pressure.c).  A bound. */
#define DE__WALK_PIN_BUDGET	4

/* ---- Slow disks (global.c, policy.c) ------------------------------- */

/* DE_SCHED_AUTO times the reads of the first DE__PROBE_DIRS directories
 * of at most DE__PROBE_ENTS_MAX entries (a longer listing's time is the
 * CPU's); a median above DE__SLOW_READ_NS tells a slow disk: "Slow
 * disks" (a cold directory takes 7-16 ms there, 0.2-0.8 ms here). */
#define DE__PROBE_DIRS		8
#define DE__PROBE_ENTS_MAX	4096u
#define DE__SLOW_READ_NS	2000000u

/* A global window's entries, with the next one's read ahead where it
 * fills (24 bytes each in its sort, about 100 with their listings:
 * 38 MiB), and its directory blocks where the journal's
 * size is not known (half of a 4 MiB journal's transaction): "Slow
 * disks", bench/results/2026-12-03/NOTES.md.  At 524,288 a tree of ten
 * million peaked at 62.2 MiB, where 341 directories of 1,000 files a
 * window went as fast as 524 on four million (2026-12-06/NOTES.md). */
#define DE__WIN_ENTS		(3u << 17)
#define DE__WIN_BLOCKS		170u

/* order.c de__fill_runs_at(): ext4's inodes to an inode-table block (256
 * bytes each in 4 KiB blocks, mke2fs's default), and the widest run of
 * blocks without a file of the window that is filled: a write home that
 * skips a block costs a rotation, one that covers it 27 us on the hdd
 * model (bench/results/2026-12-06/NOTES.md, "Holes"). */
#define DE__ITABLE_INODES	16u
#define DE__FILL_GAP		8u

/* global.c: where holes are filled, a window holds a quarter of a
 * transaction's directory blocks (half of an unfilled one's), and
 * DE__FILL_AHEAD windows more fill it: read ahead where the window's
 * entries and fds leave room, the rest peeked (peek.c).  ext4's
 * checkpoint writes home each directory block that the two transactions
 * after the one that last logged it left alone: with half a
 * transaction's blocks a window left a few dozen of them in each, with a
 * quarter a few, and the windows ahead fill the holes of its sparser
 * order (2026-12-07/NOTES.md).  A huge directory's runs fill from as
 * many runs after them, and de_order_cut() holds as many back. */
#define DE__FILL_AHEAD		4u

/* peek.c: the fillers a window keeps of the directories it has not
 * read, a DE__PEEK_PART-th of its entries (98,304 of DE__WIN_ENTS, at
 * about 34 bytes each with their names: 3.2 MiB).  A tree of ten
 * million has more holes a window than that: without a bound they took
 * its peak RSS from 45.4 to 64.2 MiB, with it 48.2 (2026-12-07/NOTES.md,
 * "Four million with a peek"). */
#define DE__PEEK_PART		4u
/* ... and looks for holes only where the window's files are at least
 * one in DE__PEEK_SPAN inode-table blocks: its bitmap then takes at most
 * 4 bytes a file (at ten million, a file in 5.5 blocks).  Sparser, the
 * gaps are mostly wider than DE__FILL_GAP and are not filled. */
#define DE__PEEK_SPAN		32u

/* dirahead.c: extents of the next directories are joined across gaps of
 * up to DE__AHEAD_GAP blocks (reading 64 blocks more costs 1.7 ms on the
 * hdd model, a request a rotation of 4.2), and asked in pieces of
 * DE__AHEAD_CHUNK (128 KiB: the kernel reads at most its read-ahead size
 * a call; more is dropped). */
#define DE__AHEAD_GAP		64u
#define DE__AHEAD_CHUNK		32u
/* push.c: the inode tables' write-back is asked for every DE__PUSH_MS,
 * about once for each transaction the hdd model's journal commits in the
 * million-file tree; asked more often (every 50 ms, or back to back),
 * the writes come in pieces between the journal's, and the run is slower
 * than without (docs/BENCHMARKS.md, "Writing the inode tables home").
 * At most DE__PUSH_SPANS extents of them: the first, where more. */
#define DE__PUSH_MS		250
#define DE__PUSH_SPANS		4096u
/* push.c: not where the run's fd budget is under this (fd_pressure),
 * nor for an order of fewer files than a transaction holds unlinks (jbd2
 * logged 2,600 to 3,100 a transaction in the disk model's runs): such an
 * order is committed and written home as one, and waits for no
 * checkpoint it could be spared. */
#define DE__PUSH_MIN_FDS	64u
#define DE__PUSH_MIN_FILES	4096u
/* de_dir_ahead(): a directory listed whole is asked for from this many
 * blocks (64 KiB, some 1,500 names): smaller, its reads are few. */
#define DE__DIR_AHEAD_MIN	16u

/* ---- Polite deletion (pace.c) -------------------------------------- */

/* de_config_polite(): 500 removals a second in one burst where there is
 * no pressure signal, 100 while others wait, nothing for the first
 * 30 s of that: "Polite deletion". */
#define DE__POLITE_RATE		500u
#define DE__POLITE_BUSY_RATE	100u
#define DE__POLITE_YIELD_MS	30000u

/* The pressure signal's windows (pace.c says how they are used): a
 * quiet window to read others' waits, the looks after a busy one, the
 * look at full speed, and how long a window's verdict stands.  A window
 * with others waiting BUSY_PERMILLE of its time is busy:
 * bench/results/2026-12-01/NOTES.md ("10% of a window"). */
#define DE__MS			1000000ull	/* in ns */
#define DE__PACE_PROBE_NS	(20 * DE__MS)
#define DE__PACE_CONFIRM_NS	(100 * DE__MS)
#define DE__PACE_REPROBE_NS	(1000 * DE__MS)
#define DE__PACE_LOOK_NS	(100 * DE__MS)
#define DE__PACE_SUSPECT_NS	(500 * DE__MS)
#define DE__BUSY_PERMILLE	100

#endif /* DE_TUNABLES_H */
