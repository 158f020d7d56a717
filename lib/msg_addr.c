/*
 * msg_addr.c - "ip:port" addresses: parsing, resolving to a socket
 * address, and formatting one back ("[ipv6]:port" for IPv6).
 *
 * Names are resolved with getaddrinfo() on the caller's thread
 * (msgr_listen, msgr_connect), never on the loop, which must not block.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msgr_int.h"

int msg_parse_addr(const char *addr, char *ip, size_t iplen, uint16_t *port)
{
	const char *host, *colon, *end;
	size_t hlen;
	char *pend;
	unsigned long p;

	if (!addr || !*addr)
		return -EINVAL;
	if (addr[0] == '[') {
		host = addr + 1;
		end = strchr(host, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		colon = end + 1;
	} else {
		host = addr;
		colon = strrchr(addr, ':');
		if (!colon || memchr(addr, ':', (size_t)(colon - addr)))
			return -EINVAL;	/* IPv6 needs brackets */
		end = colon;
	}
	hlen = (size_t)(end - host);
	if (hlen == 0)
		return -EINVAL;
	if (colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	errno = 0;
	p = strtoul(colon + 1, &pend, 10);
	if (errno || *pend || p > 65535)
		return -EINVAL;
	if (hlen + 1 > iplen)
		return -ENAMETOOLONG;
	memcpy(ip, host, hlen);
	ip[hlen] = '\0';
	*port = (uint16_t)p;
	return 0;
}

/* addr -> a socket address: numeric addresses directly, names through
 * getaddrinfo() (on the caller's thread, never the loop's). */
int msgr__resolve(const char *addr, struct sockaddr_storage *ss, socklen_t *len)
{
	char ip[256];
	uint16_t port;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int r;

	r = msg_parse_addr(addr, ip, sizeof(ip), &port);
	if (r < 0)
		return r;
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		*len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, ip, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*len = sizeof(*sin6);
		return 0;
	}
	if (getaddrinfo(ip, NULL, &hints, &res) != 0 || !res)
		return -EHOSTUNREACH;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	if (ss->ss_family == AF_INET)
		sin->sin_port = htons(port);
	else
		sin6->sin6_port = htons(port);
	freeaddrinfo(res);
	return 0;
}

void msgr__format_addr(const struct sockaddr *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(sin6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}
