/*
 * image_cluster.c - libatoll-image against a real cluster (image.sh starts
 * it and passes ATOLL_CONF): each check is named for the behaviour it
 * shows; the first failure stops the run with its name.
 */
#include "atoll/image.h"
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OS (64u << 10)	/* small objects: many boundaries, quick */

static struct atoll_cluster *connect_one(void)
{
	struct atoll_cluster *c;

	if (atoll_cluster_create(&c, NULL, 0) || atoll_cluster_connect(c)) {
		fprintf(stderr, "FAIL connect\n");
		exit(1);
	}
	return c;
}

static int allzero(const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* Every call of image.h that takes flags refuses each bit it does not
 * know with -EINVAL, before doing anything; a completion given to a
 * refused aio call stays unused.  Returns the number of calls that did
 * not refuse. */
static int unknown_flags_accepted(struct atoll_ioctx *io, struct atoll_image *img,
				  const char *name, char *buf)
{
	struct atoll_image_extent ext[1];
	struct atoll_completion *comp;
	int bad = 0;

	if (atoll_completion_create(NULL, NULL, NULL, &comp))
		return 1;
	for (int b = 0; b < 32; b++) {
		unsigned f = 1u << b;

		bad += atoll_image_aio_read(img, buf, 512, 0, comp, f) != -EINVAL;
		bad += atoll_image_aio_write(img, buf, 512, 0, comp, f) != -EINVAL;
		bad += atoll_image_aio_discard(img, 0, 512, comp, f) != -EINVAL;
		bad += atoll_image_aio_flush(img, comp, f) != -EINVAL;
		bad += atoll_image_aio_block_status(img, 0, 512, ext, 1, comp, f) != -EINVAL;
		bad += atoll_image_read(img, buf, 512, 0, f) != -EINVAL;
		bad += atoll_image_write(img, buf, 512, 0, f) != -EINVAL;
		bad += atoll_image_discard(img, 0, 512, f) != -EINVAL;
		bad += atoll_image_flush(img, f) != -EINVAL;
		bad += atoll_image_block_status(img, 0, 512, ext, 1, f) != -EINVAL;
		bad += atoll_image_resize(img, 8 << 20, f) != -EINVAL;
		if (f != ATOLL_IMAGE_ZERO_NO_HOLE) {
			bad += atoll_image_aio_write_zeroes(img, 0, 512, comp, f) != -EINVAL;
			bad += atoll_image_write_zeroes(img, 0, 512, f) != -EINVAL;
		}
		if (f != ATOLL_IMAGE_REMOVE_SNAPSHOTS)
			bad += atoll_image_remove(io, name, f) != -EINVAL;
		bad += atoll_image_break_lock(io, name, f) != -EINVAL;
		bad += atoll_image_snap_create(io, name, "s", 0, f) != -EINVAL;
		bad += atoll_image_snap_remove(io, name, "s", 0, f) != -EINVAL;
		bad += atoll_image_snap_rollback(io, name, "s", f) != -EINVAL;
	}
	bad += atoll_completion_is_complete(comp) != 0;
	bad += atoll_completion_wait(comp) != -EINVAL;	/* never issued */
	atoll_completion_release(comp);
	return bad;
}

int main(void)
{
	struct atoll_cluster *c = connect_one(), *c2 = connect_one();
	struct atoll_ioctx *io, *io2;
	struct atoll_image_create_options co = { sizeof(co), OS, 0 };
	struct atoll_image_open_options oo = { sizeof(oo), 0, 1500, NULL, NULL };
	struct atoll_image *img, *img2 = NULL, *snap;
	struct atoll_image_extent ext[16];
	char *buf = malloc(1 << 20), *rd = malloc(1 << 20), *old = malloc(1 << 20);
	int64_t n;
	int r;

	if (atoll_ioctx_create(c, "default", &io, 0) || atoll_ioctx_create(c2, "default", &io2, 0))
		return 1;
	for (int i = 0; i < 1 << 20; i++)
		buf[i] = (char)(rand() | 1);

	TU_OK("create_1T_image", atoll_image_create(io, "t1", 1ull << 40, &co) == 0);
	TU_OK("create_same_name_is_eexist", atoll_image_create(io, "t1", 1 << 20, &co) == -EEXIST);
	TU_OK("create_bad_size_is_einval", atoll_image_create(io, "t2", 1000, NULL) == -EINVAL);
	TU_OK("open_missing_is_enoent", atoll_image_open(io, "nope", NULL, &img) == -ENOENT);
	r = atoll_image_create(io, "t2", 8 << 20, &co);
	TU_OK("create_small_image", r == 0);
	TU_OK("open_writer", atoll_image_open(io, "t2", &oo, &img) == 0);
	TU_OK("size", atoll_image_size(img) == 8 << 20 && atoll_image_object_size(img) == OS);

	n = atoll_image_read(img, rd, 300000, 12345, 0);
	TU_OK("unwritten_reads_zeros", n == 300000 && allzero(rd, 300000));
	n = atoll_image_write(img, buf, 200001, OS - 777, 0);
	TU_OK("unaligned_write_across_objects", n == 200001);
	n = atoll_image_read(img, rd, 200001, OS - 777, 0);
	TU_OK("unaligned_read_back", n == 200001 && !memcmp(rd, buf, 200001));
	n = atoll_image_read(img, rd, 1000, OS - 1777, 0);
	TU_OK("bytes_before_write_are_zero", allzero(rd, 1000));
	TU_OK("read_past_end_is_einval", atoll_image_read(img, rd, 2, (8 << 20) - 1, 0) == -EINVAL);
	TU_OK("write_read_only_flags_einval",
	      atoll_image_aio_write(img, buf, 1, 0, NULL, 7) == -EINVAL);
	TU_OK("unknown_flags_are_einval_on_every_call",
	      unknown_flags_accepted(io, img, "t2", buf) == 0);

	n = atoll_image_block_status(img, 0, 8 << 20, ext, 16, 0);
	/* objects 0..4 exist; object 4 holds 2616 bytes (short), the rest is holes */
	TU_OK("block_status_data_then_hole", n == 2 && ext[0].flags == 0 && ext[0].off == 0 &&
	      ext[0].len == OS - 777 + 200001 && ext[1].flags == 3 &&
	      ext[1].off + ext[1].len == 8 << 20);
	n = atoll_image_block_status(img, 6 * OS, 10, ext, 16, 0);
	TU_OK("block_status_hole_inside", n == 1 && ext[0].flags == 3 && ext[0].len == 10);

	TU_OK("discard_partial", atoll_image_discard(img, OS + 100, 1000, 0) == 0);
	n = atoll_image_read(img, rd, 1000, OS + 100, 0);
	TU_OK("discarded_reads_zero", allzero(rd, 1000));
	TU_OK("write_zeroes_whole_objects", atoll_image_write_zeroes(img, OS, 2 * OS, 0) == 0);
	n = atoll_image_read(img, rd, 2 * OS, OS, 0);
	TU_OK("zeroed_reads_zero", allzero(rd, 2 * OS));
	n = atoll_image_read(img, rd, 777, OS - 777, 0);
	TU_OK("outside_zero_range_kept", !memcmp(rd, buf, 777));
	TU_OK("write_zeroes_no_hole",
	      atoll_image_write_zeroes(img, 0, 100, ATOLL_IMAGE_ZERO_NO_HOLE) == 0);
	TU_OK("flush", atoll_image_flush(img, 0) == 0);

	/* second writer refused */
	TU_OK("second_writer_is_ebusy", atoll_image_open(io2, "t2", &oo, &img2) == -EBUSY);
	{
		struct atoll_image_open_options ro = { sizeof(ro), ATOLL_IMAGE_OPEN_READ_ONLY, 0,
						       NULL, NULL };
		struct atoll_image *r2;

		TU_OK("reader_while_writer", atoll_image_open(io2, "t2", &ro, &r2) == 0);
		TU_OK("reader_cannot_write", atoll_image_write(r2, buf, 10, 0, 0) == -EROFS);
		atoll_image_close(r2);
	}

	/* resize */
	TU_OK("resize_grow", atoll_image_resize(img, 16 << 20, 0) == 0 &&
	      atoll_image_size(img) == 16 << 20);
	atoll_image_write(img, buf, 3 * OS, 10 * OS, 0);
	TU_OK("resize_shrink", atoll_image_resize(img, 10 * OS + 1024, 0) == 0);
	TU_OK("resize_grow_again", atoll_image_resize(img, 16 << 20, 0) == 0);
	n = atoll_image_read(img, rd, 3 * OS, 10 * OS, 0);
	TU_OK("shrunk_data_is_gone", !memcmp(rd, buf, 1024) && allzero(rd + 1024, 3 * OS - 1024));

	/* snapshots while the writer holds the image (through its ticker) */
	atoll_image_write(img, buf, 4 * OS, 0, 0);
	memcpy(old, buf, 4 * OS);
	TU_OK("snap_create_via_writer", atoll_image_snap_create(io2, "t2", "s1", 0, 0) == 0);
	TU_OK("snap_create_twice_eexist", atoll_image_snap_create(io2, "t2", "s1", 0, 0) == -EEXIST);
	atoll_image_write(img, buf + 5, 4 * OS, 0, 0);	/* different content */
	atoll_image_write(img, buf, 1000, 6 * OS, 0);	/* a hole at the snapshot */
	TU_OK("open_snapshot", atoll_image_open(io2, "t2@s1", NULL, &snap) == 0);
	n = atoll_image_read(snap, rd, 4 * OS, 0, 0);
	TU_OK("snapshot_has_old_content", n == 4 * OS && !memcmp(rd, old, 4 * OS));
	n = atoll_image_read(snap, rd, 1000, 6 * OS, 0);
	TU_OK("snapshot_hole_still_zero", allzero(rd, 1000));
	TU_OK("snapshot_is_read_only", atoll_image_write(snap, buf, 1, 0, 0) == -EROFS);
	atoll_image_close(snap);
	TU_OK("snap_create_second", atoll_image_snap_create(io2, "t2", "s2", 0, 0) == 0);
	atoll_image_write(img, buf + 9, OS, 0, 0);
	TU_OK("rollback_refused_while_writer",
	      atoll_image_snap_rollback(io2, "t2", "s1", 0) == -EBUSY);
	TU_OK("close_writer", atoll_image_close(img) == 0);
	TU_OK("snap_rm_newer", atoll_image_snap_remove(io2, "t2", "s2", 0, 0) == 0);
	TU_OK("rollback", atoll_image_snap_rollback(io2, "t2", "s1", 0) == 0);
	TU_OK("reopen", atoll_image_open(io, "t2", &oo, &img) == 0);
	n = atoll_image_read(img, rd, 4 * OS, 0, 0);
	TU_OK("rolled_back_content", !memcmp(rd, old, 4 * OS));
	n = atoll_image_read(img, rd, 1000, 6 * OS, 0);
	TU_OK("rolled_back_hole", allzero(rd, 1000));
	atoll_image_close(img);
	TU_OK("snap_rm", atoll_image_snap_remove(io2, "t2", "s1", 0, 0) == 0);
	TU_OK("snap_rm_missing_enoent", atoll_image_snap_remove(io2, "t2", "s1", 0, 0) == -ENOENT);

	/* lock break fences the old writer */
	TU_OK("reopen_writer", atoll_image_open(io, "t2", &oo, &img) == 0);
	TU_OK("break_lock", atoll_image_break_lock(io2, "t2", 0) == 0);
	TU_OK("new_writer_after_break", atoll_image_open(io2, "t2", &oo, &img2) == 0);
	n = atoll_image_write(img, buf, 4096, 0, 0);
	TU_OK("fenced_writer_gets_eperm", n == -EPERM);
	TU_OK("new_writer_writes", atoll_image_write(img2, buf, 4096, 0, 0) == 4096);
	atoll_image_close(img);
	atoll_image_close(img2);

	TU_OK("remove_with_snaps_needs_flag", atoll_image_snap_create(io2, "t2", "x", 0, 0) == 0 &&
	      atoll_image_remove(io2, "t2", 0) == -ENOTEMPTY);
	TU_OK("remove", atoll_image_remove(io2, "t2", ATOLL_IMAGE_REMOVE_SNAPSHOTS) == 0);
	TU_OK("removed_is_gone", atoll_image_open(io2, "t2", NULL, &img) == -ENOENT);
	TU_OK("remove_1T", atoll_image_remove(io2, "t1", 0) == 0);	/* io was fenced */
	n = atoll_image_list(io2, NULL, 0);
	TU_OK("list_empty", n == 0);

	atoll_ioctx_destroy(io);
	atoll_ioctx_destroy(io2);
	atoll_cluster_shutdown(c);
	atoll_cluster_shutdown(c2);
	free(buf);
	free(rd);
	free(old);
	return 0;
}
