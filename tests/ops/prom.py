#!/usr/bin/env python3
"""tests/ops/prom.py - a strict reader of the Prometheus text format
(version 0.0.4) for the ops tests, beside promtool.

  prom.py check URL...        fetch each /metrics and check it strictly
  prom.py value URL NAME [K=V...]
                              print the sum of NAME's samples whose labels
                              include every K=V (nothing when none match)
  prom.py status URL PATH METHOD
                              print the HTTP status of METHOD URL-base+PATH

check refuses: a line that is not HELP, TYPE or a sample; a family with
two TYPE or HELP lines, or a TYPE after its samples; a sample of no
declared family; a name or label name outside the allowed characters; a
bad escape in a label value; a repeated series; a value that is not a
float; counters not named *_total; histogram buckets without le, not
cumulative or whose +Inf differs from _count; names without the atoll_
prefix; a Content-Type other than text/plain; version=0.0.4.
"""
import re
import sys
import urllib.error
import urllib.request

NAME = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*$')
LABEL = re.compile(r'[a-zA-Z_][a-zA-Z0-9_]*$')


def fetch(url, method='GET'):
    req = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers.get('Content-Type', ''), r.read().decode('utf-8')


def parse_labels(s, where):
    """'a="x",b="y"' -> [(a, x), (b, y)], unescaping values."""
    out, i = [], 0
    while i < len(s):
        m = re.match(r'([^=]*)="', s[i:])
        if not m or not LABEL.match(m.group(1)) or m.group(1).startswith('__'):
            raise ValueError('%s: bad label at %r' % (where, s[i:]))
        name, i, val = m.group(1), i + m.end(), []
        while True:
            if i >= len(s):
                raise ValueError('%s: unterminated label value' % where)
            c = s[i]
            if c == '\\':
                nxt = s[i + 1:i + 2]
                if nxt not in ('\\', '"', 'n'):
                    raise ValueError('%s: bad escape \\%s' % (where, nxt))
                val.append({'\\': '\\', '"': '"', 'n': '\n'}[nxt])
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == '\n':
                raise ValueError('%s: line feed in a label value' % where)
            else:
                val.append(c)
                i += 1
        out.append((name, ''.join(val)))
        if i < len(s):
            if s[i] != ',':
                raise ValueError('%s: expected , at %r' % (where, s[i:]))
            i += 1
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise ValueError('%s: a label given twice' % where)
    return out


def parse(text, where='metrics'):
    """-> (families {name: type}, samples [(name, labels dict, value)])."""
    types, helps, seen_sample, samples, series = {}, {}, set(), [], set()
    if text and not text.endswith('\n'):
        raise ValueError('%s: no final line feed' % where)
    for n, line in enumerate(text.split('\n')[:-1], 1):
        at = '%s line %d' % (where, n)
        if line.startswith('#'):
            parts = line.split(' ', 3)
            if len(parts) >= 3 and parts[1] in ('HELP', 'TYPE'):
                name = parts[2]
                if not NAME.match(name):
                    raise ValueError('%s: bad name %r' % (at, name))
                if parts[1] == 'TYPE':
                    if name in types or name in seen_sample:
                        raise ValueError('%s: TYPE of %s again or after its samples' % (at, name))
                    t = parts[3] if len(parts) > 3 else ''
                    if t not in ('counter', 'gauge', 'histogram', 'summary', 'untyped'):
                        raise ValueError('%s: unknown type %r' % (at, t))
                    types[name] = t
                else:
                    if name in helps:
                        raise ValueError('%s: HELP of %s again' % (at, name))
                    h = parts[3] if len(parts) > 3 else ''
                    if re.search(r'\\[^\\n]', h.replace('\\\\', '')):
                        raise ValueError('%s: bad escape in HELP' % at)
                    helps[name] = h
            continue
        if not line.strip():
            raise ValueError('%s: empty line' % at)
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$', line)
        if not m:
            raise ValueError('%s: not a sample: %r' % (at, line))
        name, labels, value = m.group(1), parse_labels(m.group(3) or '', at), m.group(4)
        try:
            v = float(value)
        except ValueError:
            raise ValueError('%s: value %r is not a float' % (at, value))
        fam = name
        for suf in ('_bucket', '_sum', '_count'):
            if name.endswith(suf) and types.get(name[:-len(suf)]) == 'histogram':
                fam = name[:-len(suf)]
        if fam not in types:
            raise ValueError('%s: %s has no TYPE line before it' % (at, name))
        seen_sample.add(fam)
        key = (name, tuple(sorted(labels)))
        if key in series:
            raise ValueError('%s: series %s%s repeated' % (at, name, dict(labels)))
        series.add(key)
        samples.append((name, dict(labels), v))
    for fam, t in types.items():
        if not fam.startswith('atoll_'):
            raise ValueError('%s: %s lacks the atoll_ prefix' % (where, fam))
        if t == 'counter' and not fam.endswith('_total'):
            raise ValueError('%s: counter %s is not named *_total' % (where, fam))
        if t != 'counter' and fam.endswith('_total'):
            raise ValueError('%s: %s is named _total but is a %s' % (where, fam, t))
        if fam not in helps:
            raise ValueError('%s: %s has no HELP' % (where, fam))
        if t == 'histogram':
            check_histogram(fam, samples, where)
    return types, samples


def check_histogram(fam, samples, where):
    groups = {}
    for name, labels, v in samples:
        if name not in (fam + '_bucket', fam + '_sum', fam + '_count'):
            continue
        rest = tuple(sorted((k, x) for k, x in labels.items() if k != 'le'))
        g = groups.setdefault(rest, {'buckets': [], 'count': None, 'sum': None})
        if name.endswith('_bucket'):
            if 'le' not in labels:
                raise ValueError('%s: %s_bucket without le' % (where, fam))
            g['buckets'].append((float(labels['le']), v))
        elif name.endswith('_count'):
            g['count'] = v
        else:
            g['sum'] = v
    for rest, g in groups.items():
        b = g['buckets']
        if not b or b[-1][0] != float('inf'):
            raise ValueError('%s: %s%s has no +Inf bucket last' % (where, fam, dict(rest)))
        if [x[0] for x in b] != sorted(x[0] for x in b):
            raise ValueError('%s: %s buckets out of order' % (where, fam))
        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            raise ValueError('%s: %s buckets not cumulative' % (where, fam))
        if g['count'] is None or g['sum'] is None or g['count'] != b[-1][1]:
            raise ValueError('%s: %s _count missing or not the +Inf bucket' % (where, fam))


def main(argv):
    if len(argv) >= 2 and argv[0] == 'check':
        for url in argv[1:]:
            status, ctype, body = fetch(url)
            if status != 200 or not ctype.startswith('text/plain') or 'version=0.0.4' not in ctype:
                sys.exit('%s: status %d, Content-Type %r' % (url, status, ctype))
            try:
                parse(body, url)
            except ValueError as e:
                sys.exit(str(e))
        return 0
    if len(argv) >= 3 and argv[0] == 'value':
        _, samples = parse(fetch(argv[1])[2], argv[1])
        want = dict(kv.split('=', 1) for kv in argv[3:])
        vals = [v for n, l, v in samples
                if n == argv[2] and all(l.get(k) == x for k, x in want.items())]
        if vals:
            s = sum(vals)
            print(int(s) if s == int(s) else s)
        return 0
    if len(argv) == 4 and argv[0] == 'status':
        base = argv[1].rsplit('/metrics', 1)[0]
        try:
            print(fetch(base + argv[2], argv[3])[0])
        except urllib.error.HTTPError as e:
            print(e.code)
        return 0
    if len(argv) == 1 and argv[0] == 'selftest':
        return selftest()
    sys.exit(__doc__)


def selftest():
    """The checker refuses what it should (a negative control)."""
    good = ('# HELP atoll_x_total h\n# TYPE atoll_x_total counter\natoll_x_total{a="q\\"\\\\\\n"} 1\n'
            '# HELP atoll_h_seconds h\n# TYPE atoll_h_seconds histogram\n'
            'atoll_h_seconds_bucket{le="0.1"} 1\natoll_h_seconds_bucket{le="+Inf"} 2\n'
            'atoll_h_seconds_sum 0.3\natoll_h_seconds_count 2\n')
    parse(good)
    bad = [
        good.replace('atoll_x_total counter', 'atoll_x_total gauge'),
        good.replace('\\"', '\\q'),
        good.replace('_count 2', '_count 3'),
        good.replace('le="+Inf"} 2', 'le="+Inf"} 0'),
        good + 'atoll_x_total{a="q\\"\\\\\\n"} 2\n',
        good + 'atoll_y 1\n',
        good.replace('# HELP atoll_x_total h\n', ''),
        good.replace('atoll_x_total', 'x_total'),
        good.rstrip('\n'),
    ]
    for i, b in enumerate(bad):
        try:
            parse(b)
        except ValueError:
            continue
        sys.exit('selftest: bad text %d was accepted' % i)
    print('selftest ok')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
