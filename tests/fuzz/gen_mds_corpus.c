/*
 * gen_mds_corpus.c - writes the seed corpus of fuzz_mds.c: one valid
 * encoding of each file system message, behind its selector byte.
 *   gen-mds-corpus DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "corpus_enc.h"
#include "encode.h"
#include "mds_proto.h"

int main(int argc, char **argv)
{
	static struct mds_req rq;
	static struct mds_reply rp;
	static struct mds_notify nt;
	struct mds_dirent ents[2];
	struct mds_inode plus[2], in = { .ino = 4097, .mode = S_IFREG | 0644, .uid = 1000,
					 .gid = 1000, .nlink = 1, .size = 12345,
					 .mtime = 1796050089000000000ull, .gen = 1 };
	struct mds_client_info cl = { .id = 77, .addr = "127.0.0.1:40000", .requests = 9 };
	struct mds_status st = { .state = MDS_STATE_ACTIVE, .uptime_ms = 1000,
				 .addr = "127.0.0.2:6800", .meta_pool = "fs_meta",
				 .data_pool = "fs_data", .inodes = 3, .nops = 2,
				 .op_count = { 0, 5 }, .nclients = 1, .clients = &cl,
				 .lease_ms = 30000, .leases = 4, .leases_max = 1048576 };
	const char *dir;
	struct enc e;
	int r = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: gen-mds-corpus DIR\n");
		return 2;
	}
	dir = argv[1];
	enc_init(&e);

	rq.op = MDS_OP_READDIR;
	rq.uid = 1000;
	rq.client = 77;
	rq.ino = MDS_ROOT_INO;
	snprintf(rq.cookie, sizeof(rq.cookie), "f0009");
	rq.max = 1000;
	rq.reqid = 5;
	rq.lflags = MDS_L_WANT | MDS_L_PLUS;
	mds_req_encode(&e, &rq);
	r |= corpus_put_enc(dir, "req-readdir", 0, &e);
	memset(&rq, 0, sizeof(rq));
	rq.op = MDS_OP_SETXATTR;
	rq.ino = 4097;
	snprintf(rq.name, sizeof(rq.name), "user.k");
	rq.value = "v1";
	rq.vlen = 2;
	mds_req_encode(&e, &rq);
	r |= corpus_put_enc(dir, "req-setxattr", 0, &e);

	memset(ents, 0, sizeof(ents));
	snprintf(ents[0].name, sizeof(ents[0].name), "a");
	ents[0].ino = 4097;
	ents[0].mode = S_IFREG;
	snprintf(ents[1].name, sizeof(ents[1].name), "sub");
	ents[1].ino = 4098;
	ents[1].mode = S_IFDIR;
	plus[0] = in;
	plus[1] = in;
	plus[1].ino = 4098;
	plus[1].mode = S_IFDIR | 0755;
	rp.rc = 0;
	rp.ninodes = 1;
	rp.in[0] = in;
	rp.nents = 2;
	rp.ents = ents;
	rp.lease_ms = 30000;
	rp.dir_lease = MDS_ROOT_INO;
	rp.nplus = 2;
	rp.plus = plus;
	rp.nchg = 1;
	rp.chg[0].kind = MDS_CHG_DENT;
	rp.chg[0].ino = MDS_ROOT_INO;
	snprintf(rp.chg[0].name, sizeof(rp.chg[0].name), "a");
	rp.value = "user.k";
	rp.vlen = 7;
	mds_reply_encode(&e, &rp);
	r |= corpus_put_enc(dir, "reply-readdir-plus", 1, &e);

	nt.n = 2;
	nt.c[0].kind = MDS_CHG_ATTR | MDS_CHG_DATA;
	nt.c[0].ino = 4097;
	nt.c[1].kind = MDS_CHG_DENT;
	nt.c[1].ino = MDS_ROOT_INO;
	snprintf(nt.c[1].name, sizeof(nt.c[1].name), "a");
	mds_notify_encode(&e, &nt);
	r |= corpus_put_enc(dir, "notify", 2, &e);

	mds_status_encode(&e, &st);
	r |= corpus_put_enc(dir, "status", 3, &e);

	mds_inode_encode(&e, &in);
	r |= corpus_put_enc(dir, "inode", 4, &e);
	enc_free(&e);
	return r ? 1 : 0;
}
