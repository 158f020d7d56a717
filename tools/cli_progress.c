/*
 * cli_progress.c - the progress bar of `atoll` commands that run longer
 * than a second (image import/export, bench, verify):
 *
 *   importing [=========>          ]  45%  1.2 GiB of 2.6 GiB  210 MiB/s  ETA 7 s
 *
 * drawn on stderr, redrawn at most 10 times a second, only when stdout and
 * stderr are terminals and the output is not JSON, and only once the
 * command has run for a second (short commands print nothing extra).  A
 * NULL bar is allowed everywhere (nothing is drawn).
 * Without a known total (standard input) it shows the amount and rate;
 * a time-bound command (bench, verify) counts seconds.  A command that
 * prints lines while the bar is up calls cli_progress_clear() first.
 */
#include "cli.h"
#include "mono.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BAR_WIDTH	24
#define SHOW_AFTER_S	1.0
#define REDRAW_S	0.1

void cli_progress_init(struct cli_progress *p, const struct cli *cl, const char *what,
		       enum cli_progress_unit unit)
{
	memset(p, 0, sizeof(*p));
	p->enabled = !cl->json && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
	p->what = what;
	p->unit = unit;
	p->t0 = mono_now_s();
}

static void amount(const struct cli_progress *p, double v, char *buf, size_t len)
{
	if (p->unit == CLI_PROGRESS_BYTES)
		cli_human_bytes(v, buf, len);
	else
		snprintf(buf, len, "%.0f s", v);
}

static void draw(struct cli_progress *p, double now)
{
	double el = now - p->t0, rate = el > 0 ? p->done / el : 0;
	char line[256], a[32], b[32], r[32];
	size_t off;

	off = (size_t)snprintf(line, sizeof(line), "%s", p->what);
	amount(p, p->done, a, sizeof(a));
	if (p->total > 0) {
		double f = p->done >= p->total ? 1.0 : p->done / p->total;
		int fill = (int)(f * BAR_WIDTH);

		line[off++] = ' ';
		line[off++] = '[';
		for (int i = 0; i < BAR_WIDTH; i++)
			line[off++] = i < fill ? '=' : i == fill ? '>' : ' ';
		line[off++] = ']';
		amount(p, p->total, b, sizeof(b));
		off += (size_t)snprintf(line + off, sizeof(line) - off, " %3d%%  %s of %s",
					(int)(f * 100), a, b);
	} else {
		off += (size_t)snprintf(line + off, sizeof(line) - off, " %s", a);
	}
	if (p->unit == CLI_PROGRESS_BYTES && el > 0) {
		cli_human_bytes(rate, r, sizeof(r));
		off += (size_t)snprintf(line + off, sizeof(line) - off, "  %s/s", r);
	}
	if (p->total > p->done && rate > 0 && off < sizeof(line))
		snprintf(line + off, sizeof(line) - off, "  ETA %.0f s",
			 (p->total - p->done) / rate + 0.5);
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	p->shown = true;
	p->drawn_at = now;
}

void cli_progress_update(struct cli_progress *p, double done, double total)
{
	double now;

	if (!p || !p->enabled)
		return;
	p->done = done;
	p->total = total;
	now = mono_now_s();
	if (now - p->t0 < SHOW_AFTER_S || (p->shown && now - p->drawn_at < REDRAW_S))
		return;
	draw(p, now);
}

void cli_progress_clear(struct cli_progress *p)
{
	if (!p || !p->enabled || !p->shown)
		return;
	fprintf(stderr, "\r\033[K");
	fflush(stderr);
	p->shown = false;
}

void cli_progress_done(struct cli_progress *p)
{
	if (!p || !p->enabled || !p->shown)
		return;
	draw(p, mono_now_s());
	fputc('\n', stderr);
	fflush(stderr);
	p->shown = false;
	p->enabled = false;
}
