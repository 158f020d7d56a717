/*
 * privdrop.c - a daemon started as root becomes an unprivileged user
 * (`user = NAME` in atoll.conf, or --user NAME) once it has opened what
 * needs root: its listening sockets, devices and stores (doc/admin.md,
 * "Least privilege").
 *
 * The daemon's own folders (its data folder, its log folder) are handed
 * to that user first, recursively, as systemd's StateDirectory= does, so
 * that files it creates later (a monitor's log segments, an OSD's saved
 * monitor map) can be written whoever made the folder.  Then the
 * supplementary groups, the group and the user change, in that order
 * (setuid last: after it nothing else could change), and a setuid(0)
 * that succeeds afterwards is an error: the drop must be irreversible.
 * glibc applies set*id to every thread of the process.
 */
#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "privdrop.h"

static uid_t chown_uid;
static gid_t chown_gid;
static int chown_err;
static char chown_path[256];

static int chown_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	if (lchown(path, chown_uid, chown_gid) < 0) {
		chown_err = -errno;
		snprintf(chown_path, sizeof(chown_path), "%s", path);
		return 1;	/* stop the walk */
	}
	return 0;
}

int priv_drop(const char *user, const char *const *dirs, size_t ndirs, char *err, size_t errlen)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int r;

	if (!user || !*user)
		return 0;
	r = getpwnam_r(user, &pw, buf, sizeof(buf), &res);
	if (r || !res) {
		snprintf(err, errlen, "user '%s' does not exist%s%s; create it with: useradd "
			 "--system --no-create-home %s (or systemd-sysusers with "
			 "packaging/sysusers.d/atoll.conf), or remove the option 'user'", user,
			 r ? ": " : "", r ? strerror(r) : "", user);
		return r ? -r : -ENOENT;
	}
	if (geteuid() != 0) {
		if (pw.pw_uid == geteuid())
			return 0;	/* already that user */
		snprintf(err, errlen, "option 'user' = '%s': only a daemon started as root can "
			 "become another user (this one runs as uid %u); start it as root or "
			 "as '%s', or remove the option", user, (unsigned)geteuid(), user);
		return -EPERM;
	}
	/* the daemon's folders become the user's (nftw has no argument for
	 * the callback: static state, one caller at start-up) */
	chown_uid = pw.pw_uid;
	chown_gid = pw.pw_gid;
	for (size_t i = 0; i < ndirs; i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		chown_err = 0;
		if (nftw(dirs[i], chown_one, 16, FTW_PHYS | FTW_MOUNT) != 0 || chown_err) {
			r = chown_err ? chown_err : -errno;
			snprintf(err, errlen, "cannot give '%s' to user '%s': %s", chown_err ?
				 chown_path : dirs[i], user, strerror(-r));
			return r;
		}
	}
	if (initgroups(user, pw.pw_gid) < 0 || setgid(pw.pw_gid) < 0 || setuid(pw.pw_uid) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot become user '%s' (uid %u, gid %u): %s", user,
			 (unsigned)pw.pw_uid, (unsigned)pw.pw_gid, strerror(-r));
		return r;
	}
	if (pw.pw_uid != 0 && setuid(0) == 0) {
		snprintf(err, errlen, "became user '%s' but could become root again", user);
		return -EPERM;
	}
	log_info("priv", "running as user '%s' (uid %u, gid %u)", user, (unsigned)pw.pw_uid,
		 (unsigned)pw.pw_gid);
	return 0;
}

int priv_drop_config(const struct config *cfg, const char *who, const char *const *dirs,
		     size_t ndirs, char *err, size_t errlen)
{
	const char *user = NULL;
	int r = config_get_str(cfg, who, "user", "", &user, err, errlen);

	if (r < 0)
		return r;
	return priv_drop(user, dirs, ndirs, err, errlen);
}
