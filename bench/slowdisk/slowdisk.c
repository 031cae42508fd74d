/*
 * slowdisk: a disk that takes a disk's time.  A FUSE file system (libfuse3)
 * with one file, "disk", served from an image file one request at a time,
 * each answered when a model of a disk says it would be.  A loop device on
 * mnt/disk (losetup --direct-io=on) turns it into a block device that
 * mkfs, mount and the tools under test use as they use a real one.
 *
 *   slowdisk [--model=hdd|cloud] [model options] IMAGE MOUNTPOINT [FUSE options]
 *
 * The models (bench/slowdisk/README.md gives the equations):
 *   hdd    one head: a request that starts where the last one ended pays
 *          only its transfer; any other pays a seek that grows with the
 *          square root of the distance, half a rotation on average, and
 *          the transfer.  Writes go through (no write cache).
 *          --seek-min=MS (0.8) --seek-max=MS (15.0, full stroke)
 *          --rpm=N (7200) --mbps=N (150, transfer MB/s) --seed=N (1)
 *   cloud  a volume with one budget of operations a second shared by
 *          reads and writes, each op at most --op-kib, and a latency.
 *          --iops=N (400) --op-kib=N (256) --latency=MS (0.5)
 *   --trace=FILE appends each request to FILE as it is served, a line
 *          "SECONDS R|W OFFSET LENGTH" (the model's clock, bytes), and
 *          "reset" where the counters were set to zero: where a run's
 *          requests went (journal, inode tables, directories).
 *
 * Time is sleeps on a virtual clock, not work: a request finishes at
 * max(now, when the disk went idle) + what the model charges, and the
 * daemon sleeps until then.  The host's own disk only has to be faster
 * than the model, so runs are steady on a shared machine.  The daemon is
 * single-threaded: the disk serves one request at a time, in the order
 * the kernel sends them.
 *
 * mnt/stats reads the counters (requests, bytes, seeks, model seconds)
 * as "name value" lines; writing to it sets them to zero.
 *
 * The command line, the start and the counters file are the skeleton's
 * (fusemodel.c); this file is the model's rule and its file operations.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fusemodel.h"

enum model { HDD, CLOUD };

static struct {
	enum model model;
	double seek_min, seek_max;	/* seconds */
	double rotation;		/* seconds a revolution */
	double bytes_per_s;
	double iops, latency;		/* cloud */
	uint64_t op_bytes;
	uint64_t seed;
} m = {
	.model = HDD, .seek_min = 0.8e-3, .seek_max = 15.0e-3,
	.rotation = 60.0 / 7200, .bytes_per_s = 150e6,
	.iops = 400, .latency = 0.5e-3, .op_bytes = 256 << 10, .seed = 1,
};

/* The options that set them, for the skeleton's getopt_long(). */
const struct option model_options[] = {
	{ "model", required_argument, NULL, 'm' },
	{ "seek-min", required_argument, NULL, 's' },
	{ "seek-max", required_argument, NULL, 'S' },
	{ "rpm", required_argument, NULL, 'r' },
	{ "mbps", required_argument, NULL, 'b' },
	{ "seed", required_argument, NULL, 'e' },
	{ "iops", required_argument, NULL, 'i' },
	{ "op-kib", required_argument, NULL, 'o' },
	{ "latency", required_argument, NULL, 'l' },
	{ "trace", required_argument, NULL, 'T' },
	{ NULL, 0, NULL, 0 }
};

static int img_fd = -1;
static const char *trace_path;
static FILE *trace;		/* --trace: one line a request */
static uint64_t capacity;

/* The disk's state and its counters.  One thread touches them. */
static uint64_t head;		/* hdd: where the last request ended */
static uint64_t busy_until;	/* ns, CLOCK_MONOTONIC: the disk is idle after */
static uint64_t next_token;	/* cloud: when the next op may start */
static uint64_t rng;
static struct {
	uint64_t reads, writes, read_bytes, write_bytes, seeks, ops;
	double model_s;		/* the time the model charged */
} c;

/* xorshift64*: a fixed seed gives the same rotations every run. */
static double uniform(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (double)((rng * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

/* What the hdd model charges for len bytes at off, in seconds. */
static double charge(uint64_t off, uint64_t len)
{
	double t = (double)len / m.bytes_per_s;

	if (off != head) {
		double d = (double)(off > head ? off - head : head - off);

		t += m.seek_min + (m.seek_max - m.seek_min) * sqrt(d / (double)capacity);
		t += uniform() * m.rotation;
		c.seeks++;
	}
	head = off + len;
	return t;
}

/*
 * Count a request that arrived at ns ARRIVED, the N bytes at OFF that
 * pread() or pwrite() moved, charge it and sleep until the model says
 * it is done (the copy from or to the image is inside that time).
 * Returns FUSE's answer: N, or -errno for a failed call (not counted).
 *   hdd:   it starts when the disk is idle and takes what charge() says.
 *   cloud: its ops take tokens that come at --iops a second and are not
 *          saved up while the volume is idle (no burst credit); it is
 *          done one latency after its last token.
 */
static int serve(uint64_t arrived, int writing, uint64_t off, ssize_t n)
{
	uint64_t start, done, len = (uint64_t)n;

	if (n < 0)
		return -errno;
	if (writing) {
		c.writes++;
		c.write_bytes += len;
	} else {
		c.reads++;
		c.read_bytes += len;
	}
	start = busy_until > arrived ? busy_until : arrived;
	if (m.model == CLOUD) {
		uint64_t ops = (len + m.op_bytes - 1) / m.op_bytes, last;
		uint64_t gap = (uint64_t)(1e9 / m.iops);

		if (!ops)
			ops = 1;
		c.ops += ops;
		last = (next_token > start ? next_token : start) + (ops - 1) * gap;
		next_token = last + gap;
		done = last + (uint64_t)(m.latency * 1e9);
	} else {
		done = start + (uint64_t)(charge(off, len) * 1e9);
	}
	c.model_s += (double)(done - start) / 1e9;
	busy_until = done;
	if (trace)
		fprintf(trace, "%.6f %c %llu %llu\n", (double)start / 1e9,
			writing ? 'W' : 'R', (unsigned long long)off,
			(unsigned long long)len);
	fm_sleep_until(done);
	return (int)n;
}

static int is(const char *path, const char *name)
{
	return path[0] == '/' && strcmp(path + 1, name) == 0;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof *st);
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (strcmp(path, "/") == 0) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (is(path, "disk")) {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = (off_t)capacity;
	} else if (is(path, "stats")) {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = 4096;
	} else {
		return -ENOENT;
	}
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	(void)off, (void)fi, (void)flags;
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "disk", NULL, 0, 0);
	fill(buf, "stats", NULL, 0, 0);
	return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	if (!is(path, "disk"))
		return -ENOENT;
	/* Every request reaches us, none is answered from the page cache. */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	return 0;
}

/* The counters file, listed beside the disk. */
const char model_counters[] = "/stats";

void model_report(struct fm_text *t)
{
	fm_line(t, "model", "%s", m.model == HDD ? "hdd" : "cloud");
	fm_line(t, "reads", "%llu", (unsigned long long)c.reads);
	fm_line(t, "writes", "%llu", (unsigned long long)c.writes);
	fm_line(t, "read_bytes", "%llu", (unsigned long long)c.read_bytes);
	fm_line(t, "write_bytes", "%llu", (unsigned long long)c.write_bytes);
	fm_line(t, "seeks", "%llu", (unsigned long long)c.seeks);
	fm_line(t, "ops", "%llu", (unsigned long long)c.ops);
	fm_line(t, "model_seconds", "%.6f", c.model_s);
}

void model_reset(void)
{
	memset(&c, 0, sizeof c);
	if (trace)
		fputs("reset\n", trace);
}

static int fs_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	uint64_t arrived = fm_now_ns();

	(void)path, (void)fi;
	if ((uint64_t)off >= capacity)
		return 0;
	if (size > capacity - (uint64_t)off)
		size = (size_t)(capacity - (uint64_t)off);
	return serve(arrived, 0, (uint64_t)off, pread(img_fd, buf, size, off));
}

static int fs_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	uint64_t arrived = fm_now_ns();

	(void)path, (void)fi;
	if ((uint64_t)off + size > capacity)
		return -ENOSPC;
	return serve(arrived, 1, (uint64_t)off, pwrite(img_fd, buf, size, off));
}

/* Write-through: a flush has nothing left to do. */
static int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path, (void)datasync, (void)fi;
	return 0;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)fi;
	return is(path, "disk") && (uint64_t)size == capacity ? 0 : -EPERM;
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* Requests as large as the loop device sends (the kernel caps
	 * them at its max_pages). */
	conn->max_write = 1 << 20;
	cfg->direct_io = 1;
	cfg->kernel_cache = 0;
	cfg->attr_timeout = 3600;
	cfg->entry_timeout = 3600;
	return NULL;
}

const struct fuse_operations model_ops = {
	.init = fs_init,
	.getattr = fs_getattr,
	.readdir = fs_readdir,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.fsync = fs_fsync,
	.truncate = fs_truncate,
};

const char model_name[] = "slowdisk";
const char model_usage[] =
	"usage: slowdisk [--model=hdd|cloud] [options] IMAGE MOUNTPOINT [FUSE options]\n"
	"  hdd:   --seek-min=MS (0.8) --seek-max=MS (15.0) --rpm=N (7200)\n"
	"         --mbps=N (150) --seed=N (1)\n"
	"  cloud: --iops=N (400) --op-kib=N (256) --latency=MS (0.5)\n"
	"  --trace=FILE: append each request to FILE (seconds, R|W, offset, length)\n"
	"Serves IMAGE as MOUNTPOINT/disk at the model's speed; MOUNTPOINT/stats\n"
	"has the counters.  See bench/slowdisk/README.md.\n";

int model_option(int opt, const char *arg)
{
	switch (opt) {
	case 'm':
		if (strcmp(arg, "hdd") == 0)
			m.model = HDD;
		else if (strcmp(arg, "cloud") == 0)
			m.model = CLOUD;
		else
			return -1;
		break;
	case 's': m.seek_min = fm_number("seek-min", arg, 0) / 1e3; break;
	case 'S': m.seek_max = fm_number("seek-max", arg, 0) / 1e3; break;
	case 'r': m.rotation = 60.0 / fm_number("rpm", arg, 1); break;
	case 'b': m.bytes_per_s = fm_number("mbps", arg, 0.001) * 1e6; break;
	case 'e': m.seed = (uint64_t)fm_number("seed", arg, 0); break;
	case 'i': m.iops = fm_number("iops", arg, 0.001); break;
	case 'o': m.op_bytes = (uint64_t)fm_number("op-kib", arg, 1) << 10; break;
	case 'l': m.latency = fm_number("latency", arg, 0) / 1e3; break;
	case 'T': trace_path = arg; break;
	default: return -1;
	}
	return 0;
}

int model_start(const char *image)
{
	struct stat st;

	if (m.seek_max < m.seek_min) {
		fprintf(stderr, "slowdisk: --seek-max is below --seek-min\n");
		return 2;
	}
	rng = m.seed * 2654435761u + 0x9E3779B97F4A7C15ull;
	img_fd = open(image, O_RDWR | O_CLOEXEC);
	if (img_fd < 0 || fstat(img_fd, &st) < 0) {
		fprintf(stderr, "slowdisk: %s: %s\n", image, strerror(errno));
		return 1;
	}
	capacity = (uint64_t)st.st_size;
	if (!capacity) {
		fprintf(stderr, "slowdisk: %s is empty\n", image);
		return 1;
	}
	if (trace_path) {
		/* Opened before the daemon detaches; a line at a time, so a
		 * daemon ended by the unmount leaves every line. */
		trace = fopen(trace_path, "ae");
		if (!trace) {
			fprintf(stderr, "slowdisk: %s: %s\n", trace_path, strerror(errno));
			return 1;
		}
		setvbuf(trace, NULL, _IOLBF, 0);
	}
	/* One request at a time. */
	fm_fuse_arg("-s");
	return 0;
}
