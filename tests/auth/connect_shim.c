/*
 * connect_shim.c - LD_PRELOAD shim for the secure-mode tests: connect()
 * to an IPv4 address named in ATOLL_CONNECT_MAP goes to another one, so
 * that a client reaches real daemons through a tampering proxy
 * (tests/auth/tamperproxy.py) while their maps keep their real addresses.
 *
 *   ATOLL_CONNECT_MAP="127.0.0.1:6801=127.0.0.1:7801,127.0.0.1:6802=..."
 *
 * Anything not in the map connects as asked.  Test-only: nothing here is
 * built into the daemons or the library.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

/* Whether sin is FROM of a pair of the map; *to gets its TO. */
static int map_lookup(const struct sockaddr_in *sin, struct sockaddr_in *to)
{
	const char *map = getenv("ATOLL_CONNECT_MAP");
	char buf[4096], *save = NULL;

	if (!map || strlen(map) >= sizeof(buf))
		return 0;
	strcpy(buf, map);
	for (char *pair = strtok_r(buf, ",", &save); pair; pair = strtok_r(NULL, ",", &save)) {
		char fip[64], tip[64];
		unsigned int fport, tport;
		struct in_addr fa;

		if (sscanf(pair, "%63[0-9.]:%u=%63[0-9.]:%u", fip, &fport, tip, &tport) != 4 ||
		    inet_pton(AF_INET, fip, &fa) != 1)
			continue;
		if (fa.s_addr != sin->sin_addr.s_addr || htons((uint16_t)fport) != sin->sin_port)
			continue;
		memset(to, 0, sizeof(*to));
		to->sin_family = AF_INET;
		to->sin_port = htons((uint16_t)tport);
		if (inet_pton(AF_INET, tip, &to->sin_addr) != 1)
			return 0;
		return 1;
	}
	return 0;
}

int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	static connect_fn real;
	struct sockaddr_in to;

	if (!real)
		real = (connect_fn)dlsym(RTLD_NEXT, "connect");
	if (sa && sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in) &&
	    map_lookup((const struct sockaddr_in *)sa, &to))
		return real(fd, (const struct sockaddr *)&to, sizeof(to));
	return real(fd, sa, len);
}
